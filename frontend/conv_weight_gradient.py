"""A convolution's weight gradient when the batch it sums over is symbolic.

The weight gradient of ``y = conv(x, w)`` sums over the batch and over the output positions.
Written as a convolution (torch's and JAX's own rule), the batch becomes the contracted
feature dim, which the IR's ``convolution`` needs static: a CNN trained at a changing batch
size would fail at its second size. Here it is one ``dot_general`` per kernel tap instead,
each contracting a strided slice of the padded input with the output gradient over the
batch and the output positions, so the batch may be any size. Both frontends use it only
where the batch is symbolic (the convolution form is faster where it is not).

Example::

    >>> import numpy as np
    >>> from parity.ir import GraphBuilder, evaluate, f32
    >>> b = GraphBuilder()
    >>> x, dy = b.input(f32[2, 1, 3]), b.input(f32[2, 1, 2])
    >>> dw = weight_gradient(b, x, dy, kernel=(2,), strides=(1,), padding=((0, 0),),
    ...                      lhs_dilation=(1,), rhs_dilation=(1,), groups=1)
    >>> ones = np.ones((2, 1, 3), np.float32)
    >>> evaluate(b.build([dw]), [ones, np.ones((2, 1, 2), np.float32)])[0].tolist()   # 2 samples x 2 positions
    [[[4.0, 4.0]]]
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import product

import numpy as np

from ..ir.builder import GraphBuilder
from ..ir.graph import Value


def weight_gradient(b: GraphBuilder, x: Value, dy: Value, *, kernel: Sequence[int], strides: Sequence[int],
                    padding: Sequence[tuple[int, int]], lhs_dilation: Sequence[int], rhs_dilation: Sequence[int],
                    groups: int) -> Value:
    """The gradient with respect to ``w`` of ``convolution(x, w)`` with these attributes, given
    the output gradient ``dy``: x [N, C, *in], dy [N, O, *out] -> [O, C/groups, *kernel]. N may be
    symbolic; the channel and spatial dims are static."""
    rank = x.type.rank
    n = rank - 2
    batch, channels = x.type.shape[:2]
    out_channels, out_spatial = dy.type.shape[1], tuple(dy.type.shape[2:])
    per_group, out_per_group = channels // groups, out_channels // groups
    zero = b.constant(np.zeros((), x.type.dtype.numpy))
    if any(padding_amount for pair in padding for padding_amount in pair) or any(d != 1 for d in lhs_dilation):
        x = b.pad(x, zero, edge_padding_low=(0, 0, *(lo for lo, _ in padding)),
                  edge_padding_high=(0, 0, *(hi for _, hi in padding)),
                  interior_padding=(0, 0, *(d - 1 for d in lhs_dilation)))
    # dy as [N, G, O/G, *out]; each tap's slice of x as [N, G, C/G, *out]; the dot keeps G as its batch
    dy = b.reshape(dy, shape=(batch, groups, out_per_group, *out_spatial))
    contracted = (0, *range(3, 3 + n))
    taps = []
    for tap in product(*(range(k) for k in kernel)):
        starts = [t * d for t, d in zip(tap, rhs_dilation)]
        limits = [start + (o - 1) * s + 1 if o else start for start, o, s in zip(starts, out_spatial, strides)]
        window = b.slice(x, start_indices=(0, 0, *starts), limit_indices=(batch, channels, *limits),
                         strides=(1, 1, *strides))
        window = b.reshape(window, shape=(batch, groups, per_group, *out_spatial))
        # [G, C/G, O/G]: this tap's weights for every pair of channels in a group
        product_ = b.dot_general(window, dy, lhs_contracting_dims=contracted, rhs_contracting_dims=contracted,
                                 lhs_batch_dims=(1,), rhs_batch_dims=(1,))
        taps.append(b.reshape(product_, shape=(groups, per_group, out_per_group, 1)))
    stacked = taps[0] if len(taps) == 1 else b.concatenate(*taps, dimension=3)  # [G, C/G, O/G, taps]
    stacked = b.transpose(stacked, permutation=(0, 2, 1, 3))
    return b.reshape(stacked, shape=(out_channels, per_group, *kernel))
