"""Resampling aten ops: nearest/bilinear upsampling and ``grid_sampler_2d`` with its backward."""

from __future__ import annotations

from ...ir.dtypes import DType
from ..context import TranslationContext, unsupported


def _upsample(mode: str):
    def translate(ctx: TranslationContext, x, output_size, *args):
        """.vec: (size, [align_corners,] scale_factors); .default: (size, [align_corners,] *scales)."""
        align_corners = bool(args[0]) if mode == "bilinear" and args else False
        rest = args[1:] if mode == "bilinear" else args
        scales = [f for a in rest for f in (a if isinstance(a, (list, tuple)) else [a]) if f is not None]
        out_spatial = tuple(ctx.out.shape[2:])
        # align_corners maps the corners onto each other whatever the scale: only the sizes count
        if scales and not align_corners and any(o != s * f for o, s, f in zip(out_spatial, x.type.shape[2:], scales)):
            unsupported("upsampling with a scale factor that does not divide the sizes exactly")
        attrs = {"align_corners": align_corners} if mode == "bilinear" else {}
        return ctx.b.interpolate(x, size=out_spatial, mode=mode, **attrs)

    return translate



_BILINEAR, _NEAREST = 0, 1
_ZEROS, _BORDER, _REFLECTION = 0, 1, 2


def grid_sampler_2d(ctx: TranslationContext, x, grid, interpolation_mode, padding_mode, align_corners):
    """F.grid_sample on 4-d input: bilinear or nearest, zeros/border/reflection padding.

    The coordinate formulas are torch's CPU kernel's; each corner is a gather from the
    flattened image, and a corner outside the image is 0 (selected, never multiplied).

    Example: a grid of (-1, -1) with align_corners=True samples the top-left pixel.
    """
    n, c, height, width, out_h, out_w = _sampled_sizes(x, grid, interpolation_mode, "grid_sampler_2d")
    b = ctx.b
    shape = (n, out_h, out_w)
    (ix, _), (iy, _) = _grid_pixels(ctx, grid, (height, width), padding_mode, align_corners)
    image = ctx.reshape(x, (n, c, height * width))
    if interpolation_mode == _NEAREST:
        return _corner(ctx, image, b.round(ix), b.round(iy), (height, width), (n, c, out_h, out_w))
    x0, y0 = b.floor(ix), b.floor(iy)
    one = ctx.full(1, ix.type.dtype, shape)
    x1, y1 = b.add(x0, one), b.add(y0, one)
    corners = ((x0, y0, b.mul(b.sub(x1, ix), b.sub(y1, iy))), (x1, y0, b.mul(b.sub(ix, x0), b.sub(y1, iy))),
               (x0, y1, b.mul(b.sub(x1, ix), b.sub(iy, y0))), (x1, y1, b.mul(b.sub(ix, x0), b.sub(iy, y0))))
    total = None
    for cx, cy, weight in corners:
        value = _corner(ctx, image, cx, cy, (height, width), (n, c, out_h, out_w))
        term = b.mul(value, b.broadcast_in_dim(weight, shape=value.type.shape, broadcast_dimensions=(0, 2, 3)))
        total = term if total is None else b.add(total, term)
    return total


def _sampled_sizes(x, grid, interpolation_mode: int, what: str):
    """(n, c, height, width, out_h, out_w), refusing what is not translated."""
    if interpolation_mode not in (_BILINEAR, _NEAREST):
        unsupported(f"{what} with bicubic interpolation is not translated yet")
    if not all(isinstance(d, int) for d in (*x.type.shape, *grid.type.shape)):
        unsupported(f"{what} needs static sizes")
    return (*x.type.shape, *grid.type.shape[1:3])


def _grid_pixels(ctx: TranslationContext, grid, size, padding_mode: int, align_corners):
    """((x pixel, its slope), (y pixel, its slope)), each [n, out_h, out_w], from grid [n, out_h, out_w, 2]."""
    n, out_h, out_w, _ = grid.type.shape
    pixels = []
    for which, extent in ((0, size[1]), (1, size[0])):
        part = ctx.b.slice(grid, start_indices=(0, 0, 0, which), limit_indices=(n, out_h, out_w, which + 1),
                           strides=(1, 1, 1, 1))
        pixels.append(_source_index(ctx, ctx.reshape(part, (n, out_h, out_w)), extent, padding_mode, bool(align_corners)))
    return pixels


def _source_index(ctx: TranslationContext, coord, size: int, padding_mode: int, align_corners: bool):
    """Grid coordinate in [-1, 1] -> (pixel coordinate after border clipping or reflection, its
    derivative by the grid coordinate), as torch's ``grid_sampler_compute_source_index_set_grad``."""
    b, dtype, shape = ctx.b, coord.type.dtype, coord.type.shape

    def full(v):
        return ctx.full(v, dtype, shape)

    if align_corners:  # ((coord + 1) / 2) * (size - 1)
        pixel = b.mul(b.div(b.add(coord, full(1)), full(2)), full(size - 1))
        slope = full((size - 1) / 2)
    else:  # ((coord + 1) * size - 1) / 2
        pixel = b.div(b.sub(b.mul(b.add(coord, full(1)), full(size)), full(1)), full(2))
        slope = full(size / 2)
    if padding_mode == _ZEROS:
        return pixel, slope
    if padding_mode == _REFLECTION:
        low, high = (0, 2 * (size - 1)) if align_corners else (-1, 2 * size - 1)
        pixel, mirrored = _reflect(ctx, pixel, low, high)
        slope = b.mul(slope, mirrored)
    # clipped to [0, size - 1]; torch's gradient is 0 at and past either end
    inside = b.logical_and(b.gt(pixel, full(0)), b.lt(pixel, full(size - 1)))
    return b.min(b.max(pixel, full(0)), full(size - 1)), b.select(inside, slope, full(0))


def _reflect(ctx: TranslationContext, pixel, twice_low: int, twice_high: int):
    """torch's reflect_coordinates: ``pixel`` folded into [low, high] by mirroring, and the
    derivative of the fold (1 or -1; 0 for a one-pixel line)."""
    b, dtype, shape = ctx.b, pixel.type.dtype, pixel.type.shape
    if twice_low == twice_high:
        return ctx.full(0, dtype, shape), ctx.full(0, dtype, shape)
    low, span = ctx.full(twice_low / 2, dtype, shape), ctx.full((twice_high - twice_low) / 2, dtype, shape)
    offset = b.sub(pixel, low)
    below = b.lt(offset, ctx.full(0, dtype, shape))
    distance = b.abs(offset)
    extra = b.rem(distance, span)
    flips = b.floor(b.div(distance, span))
    even = b.eq(b.rem(flips, ctx.full(2, dtype, shape)), ctx.full(0, dtype, shape))
    one, minus = ctx.full(1, dtype, shape), ctx.full(-1, dtype, shape)
    sign = b.select(below, minus, one)
    folded = b.select(even, b.add(extra, low), b.add(b.sub(span, extra), low))
    return folded, b.select(even, sign, b.neg(sign))


def _corner_at(ctx: TranslationContext, cx, cy, size):
    """(flat pixel index [n, out_h * out_w], inside [n, out_h, out_w]) of integral float coordinates;
    a corner outside the image points at pixel 0 and is masked off."""
    b, (height, width) = ctx.b, size
    shape, i64 = cx.type.shape, DType.int64
    inside = b.logical_and(
        b.logical_and(b.ge(cx, ctx.full(0, cx.type.dtype, shape)), b.lt(cx, ctx.full(width, cx.type.dtype, shape))),
        b.logical_and(b.ge(cy, ctx.full(0, cy.type.dtype, shape)), b.lt(cy, ctx.full(height, cy.type.dtype, shape))))
    zero = ctx.full(0, cx.type.dtype, shape)
    col = ctx.convert(b.select(inside, cx, zero), i64)
    row = ctx.convert(b.select(inside, cy, zero), i64)
    return ctx.reshape(b.add(b.mul(row, ctx.full(width, i64, shape)), col), (shape[0], shape[1] * shape[2])), inside


def _corner(ctx: TranslationContext, image, cx, cy, size, out_shape):
    """image[n, :, cy, cx] for integral float coordinates; 0 where outside the image."""
    b = ctx.b
    n, c, out_h, out_w = out_shape
    flat, inside = _corner_at(ctx, cx, cy, size)
    index = b.broadcast_in_dim(flat, shape=(n, c, out_h * out_w), broadcast_dimensions=(0, 2))
    value = ctx.reshape(b.gather(image, index, axis=2), out_shape)
    mask = b.broadcast_in_dim(inside, shape=out_shape, broadcast_dimensions=(0, 2, 3))
    return b.select(mask, value, ctx.full(0, value.type.dtype, out_shape))


def grid_sampler_2d_backward(ctx: TranslationContext, grad_output, x, grid, interpolation_mode, padding_mode,
                             align_corners, output_mask):
    """(input's, grid's gradient) of ``grid_sampler_2d``, bilinear or nearest, as torch's CPU kernel:
    each in-image corner adds grad * its weight to its pixel; the grid's gradient is each corner's
    value times its weight's slope, through the padding's slope (0 where clipped; nearest: 0)."""
    n, c, height, width, out_h, out_w = _sampled_sizes(x, grid, interpolation_mode, "grid_sampler_2d backward")
    b, dtype = ctx.b, x.type.dtype
    shape, points, out_shape = (n, out_h, out_w), out_h * out_w, (n, c, out_h, out_w)
    (ix, slope_x), (iy, slope_y) = _grid_pixels(ctx, grid, (height, width), padding_mode, align_corners)
    spread = ctx.reshape(ctx.convert(grad_output, dtype), (n, c, points))
    grad_input = ctx.full(0, dtype, (n, c, height * width))

    def scatter_corner(into, cx, cy, weight):
        flat, inside = _corner_at(ctx, cx, cy, (height, width))
        weight = ctx.reshape(b.select(inside, weight, ctx.full(0, dtype, shape)), (n, points))
        term = b.mul(spread, b.broadcast_in_dim(weight, shape=(n, c, points), broadcast_dimensions=(0, 2)))
        index = b.broadcast_in_dim(flat, shape=(n, c, points), broadcast_dimensions=(0, 2))
        return b.scatter(into, index, term, axis=2, reduce="add")

    if interpolation_mode == _NEAREST:
        grad_input = scatter_corner(grad_input, b.round(ix), b.round(iy), ctx.full(1, dtype, shape))
        return ctx.reshape(grad_input, x.type.shape), ctx.full(0, grid.type.dtype, grid.type.shape)
    one = ctx.full(1, dtype, shape)
    x0, y0 = b.floor(ix), b.floor(iy)
    x1, y1 = b.add(x0, one), b.add(y0, one)
    right, left, down, up = b.sub(ix, x0), b.sub(x1, ix), b.sub(iy, y0), b.sub(y1, iy)
    image, upstream = ctx.reshape(x, (n, c, height * width)), ctx.convert(grad_output, dtype)
    grad_x = grad_y = None
    # (corner, its weight, d weight / d ix, d weight / d iy)
    for cx, cy, weight, dx, dy in ((x0, y0, b.mul(left, up), b.neg(up), b.neg(left)),
                                   (x1, y0, b.mul(right, up), up, b.neg(right)),
                                   (x0, y1, b.mul(left, down), b.neg(down), left),
                                   (x1, y1, b.mul(right, down), down, right)):
        grad_input = scatter_corner(grad_input, cx, cy, weight)
        value = b.reduce_sum(b.mul(_corner(ctx, image, cx, cy, (height, width), out_shape), upstream), axes=(1,))
        grad_x = b.mul(value, dx) if grad_x is None else b.add(grad_x, b.mul(value, dx))
        grad_y = b.mul(value, dy) if grad_y is None else b.add(grad_y, b.mul(value, dy))
    pair = [ctx.reshape(b.mul(g, slope), (*shape, 1)) for g, slope in ((grad_x, slope_x), (grad_y, slope_y))]
    return ctx.reshape(grad_input, x.type.shape), ctx.convert(b.concatenate(*pair, dimension=3), grid.type.dtype)


TABLE = {
    "upsample_nearest2d.vec": _upsample("nearest"),
    "upsample_bilinear2d.vec": _upsample("bilinear"),
    "upsample_nearest2d.default": _upsample("nearest"),
    "upsample_bilinear2d.default": _upsample("bilinear"),
    "grid_sampler_2d.default": grid_sampler_2d,
    "grid_sampler_2d_backward.default": grid_sampler_2d_backward,
}
