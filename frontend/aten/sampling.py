"""Resampling aten ops: nearest/bilinear upsampling and ``grid_sampler_2d``."""

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
        if scales and any(o != s * f for o, s, f in zip(out_spatial, x.type.shape[2:], scales)):
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
    if interpolation_mode not in (_BILINEAR, _NEAREST):
        unsupported("grid_sampler_2d with bicubic interpolation is not translated yet")
    n, c, height, width = x.type.shape
    _, out_h, out_w, _ = grid.type.shape
    if not all(isinstance(d, int) for d in (*x.type.shape, *grid.type.shape)):
        unsupported("grid_sampler_2d needs static sizes")
    b = ctx.b
    shape = (n, out_h, out_w)

    def coordinate(which: int, size: int):
        part = b.slice(grid, start_indices=(0, 0, 0, which), limit_indices=(n, out_h, out_w, which + 1),
                       strides=(1, 1, 1, 1))
        return _source_index(ctx, ctx.reshape(part, shape), size, padding_mode, bool(align_corners))

    ix, iy = coordinate(0, width), coordinate(1, height)
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


def _source_index(ctx: TranslationContext, coord, size: int, padding_mode: int, align_corners: bool):
    """Grid coordinate in [-1, 1] -> pixel coordinate, then border clipping or reflection."""
    b, dtype, shape = ctx.b, coord.type.dtype, coord.type.shape

    def full(v):
        return ctx.full(v, dtype, shape)

    if align_corners:  # ((coord + 1) / 2) * (size - 1)
        pixel = b.mul(b.div(b.add(coord, full(1)), full(2)), full(size - 1))
    else:  # ((coord + 1) * size - 1) / 2
        pixel = b.div(b.sub(b.mul(b.add(coord, full(1)), full(size)), full(1)), full(2))
    if padding_mode == _ZEROS:
        return pixel
    if padding_mode == _REFLECTION:
        low, high = (0, 2 * (size - 1)) if align_corners else (-1, 2 * size - 1)
        pixel = _reflect(ctx, pixel, low, high)
    return b.min(b.max(pixel, full(0)), full(size - 1))


def _reflect(ctx: TranslationContext, pixel, twice_low: int, twice_high: int):
    """torch's reflect_coordinates: fold ``pixel`` into [low, high] by mirroring."""
    b, dtype, shape = ctx.b, pixel.type.dtype, pixel.type.shape
    if twice_low == twice_high:
        return ctx.full(0, dtype, shape)
    low, span = ctx.full(twice_low / 2, dtype, shape), ctx.full((twice_high - twice_low) / 2, dtype, shape)
    distance = b.abs(b.sub(pixel, low))
    extra = b.rem(distance, span)
    flips = b.floor(b.div(distance, span))
    even = b.eq(b.rem(flips, ctx.full(2, dtype, shape)), ctx.full(0, dtype, shape))
    return b.select(even, b.add(extra, low), b.add(b.sub(span, extra), low))


def _corner(ctx: TranslationContext, image, cx, cy, size, out_shape):
    """image[n, :, cy, cx] for integral float coordinates; 0 where outside the image."""
    b, (height, width) = ctx.b, size
    n, c, out_h, out_w = out_shape
    shape, i64 = cx.type.shape, DType.int64
    inside = b.logical_and(
        b.logical_and(b.ge(cx, ctx.full(0, cx.type.dtype, shape)), b.lt(cx, ctx.full(width, cx.type.dtype, shape))),
        b.logical_and(b.ge(cy, ctx.full(0, cy.type.dtype, shape)), b.lt(cy, ctx.full(height, cy.type.dtype, shape))))
    zero = ctx.full(0, cx.type.dtype, shape)
    col = ctx.convert(b.select(inside, cx, zero), i64)
    row = ctx.convert(b.select(inside, cy, zero), i64)
    flat = ctx.reshape(b.add(b.mul(row, ctx.full(width, i64, shape)), col), (n, out_h * out_w))
    index = b.broadcast_in_dim(flat, shape=(n, c, out_h * out_w), broadcast_dimensions=(0, 2))
    value = ctx.reshape(b.gather(image, index, axis=2), out_shape)
    mask = b.broadcast_in_dim(inside, shape=out_shape, broadcast_dimensions=(0, 2, 3))
    return b.select(mask, value, ctx.full(0, value.type.dtype, out_shape))


TABLE = {
    "upsample_nearest2d.vec": _upsample("nearest"),
    "upsample_bilinear2d.vec": _upsample("bilinear"),
    "upsample_nearest2d.default": _upsample("nearest"),
    "upsample_bilinear2d.default": _upsample("bilinear"),
    "grid_sampler_2d.default": grid_sampler_2d,
}
