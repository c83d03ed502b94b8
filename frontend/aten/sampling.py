"""Resampling aten ops: nearest/bilinear upsampling and ``grid_sampler_2d``."""

from __future__ import annotations

from ..translate import Lowering, unsupported


def _upsample(mode: str):
    def translate(ctx: Lowering, x, output_size, *args):
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


TABLE = {
    "upsample_nearest2d.vec": _upsample("nearest"),
    "upsample_bilinear2d.vec": _upsample("bilinear"),
    "upsample_nearest2d.default": _upsample("nearest"),
    "upsample_bilinear2d.default": _upsample("bilinear"),
}
