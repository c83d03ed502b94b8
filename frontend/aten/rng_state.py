"""The random-state wrappers AOTAutograd puts around a random op that activation
checkpointing recomputes (``torch.utils.checkpoint.checkpoint`` around a dropout): the forward
runs ``run_and_save_rng_state(op, *args)``, which returns the generator's state and the op's
results, and the backward recomputes the op with ``run_with_rng_state(state, op, *args)``, so
that it draws the forward's numbers (the same dropout mask).

parity's random ops draw from explicit keys (aten/random.py), so the state is the keys the
op drew: each u32[2] key as its 8 bytes, little-endian, at the front of a u8 tensor of the
state's own shape (torch's CPU generator state, u8[5056]; the rest zeros). The replay reads
its keys back from there and translates the op with them instead of fresh ones.

Example: ``checkpoint(lambda t: F.dropout(t * s, 0.5), x, use_reentrant=False)`` trains with
the gradient of the mask the forward drew (tests/frontend/test_checkpoint_random.py).
"""

from __future__ import annotations

import torch

from ...ir.dtypes import DType
from ...ir.graph import Value
from ..context import TranslationContext, unsupported

_KEY_BYTES = 8  # a u32[2] key
_SHIFTS = (0, 8, 16, 24)  # a u32's bytes, little-endian


class _KeyedContext(TranslationContext):
    """The context the wrapped op translates in: its own results' types, and keys that ``keys``
    gives (each call to ``new_key`` takes the next)."""

    def __init__(self, ctx: TranslationContext, val, keys):
        super().__init__(ctx._t, ctx.node, ctx.name)
        self._val, self._keys = val, keys

    @property
    def val(self):
        return self._val

    def new_key(self) -> Value:
        return self._keys()

    def users_of_result(self, i: int) -> bool:
        return True  # the wrapper's results are the op's, read through it: assume every one is


def _wrapped(ctx: TranslationContext, op):
    fn = ctx.translation_of(op)
    if fn is None:
        unsupported(f"it replays {op}, which parity does not translate")
    return fn


def _encode(ctx: TranslationContext, keys: list[Value], size) -> Value:
    """The u8[size] state holding ``keys``' bytes first; just those bytes where the size is
    symbolic (AOTAutograd's fake state has an unbacked size: the backward binds it from the
    tensor it gets)."""
    b, n = ctx.b, len(keys) * _KEY_BYTES
    size = size if isinstance(size, int) else max(n, 1)
    if size < n:
        unsupported(f"a random state of {size} bytes cannot hold {len(keys)} key(s)")
    if not keys:
        return ctx.full(0, DType.uint8, (size,))
    words = ctx.reshape(b.concatenate(*keys, dimension=0), (len(keys) * 2, 1))
    spread = ctx.broadcast(words, (len(keys) * 2, 4))
    shifts = b.constant([list(_SHIFTS)] * (len(keys) * 2), DType.uint32)
    low = b.bitwise_and(b.shift_right_logical(spread, shifts), ctx.full(0xFF, DType.uint32, spread.type.shape))
    flat = ctx.reshape(ctx.convert(low, DType.uint8), (n,))
    if size == n:
        return flat
    return b.pad(flat, ctx.const(0, DType.uint8), edge_padding_low=(0,), edge_padding_high=(size - n,),
                 interior_padding=(0,))


def _decode(ctx: TranslationContext, state: Value, i: int) -> Value:
    """Key ``i`` (u32[2]) read back from the state ``_encode`` made."""
    b, start = ctx.b, i * _KEY_BYTES
    size = state.type.shape[0] if state.type.rank == 1 else 0
    if isinstance(size, int) and size < start + _KEY_BYTES:  # (a symbolic size is the forward's bytes)
        unsupported(f"the random state {state.type} holds no key {i}")
    raw = b.slice(state, start_indices=(start,), limit_indices=(start + _KEY_BYTES,), strides=(1,))
    parts = ctx.convert(ctx.reshape(raw, (2, 4)), DType.uint32)
    shifted = b.shift_left(parts, b.constant([list(_SHIFTS)] * 2, DType.uint32))
    return b.reduce_sum(shifted, axes=(1,))  # disjoint bytes: the sum is the word


def run_and_save_rng_state(ctx: TranslationContext, op, *args, **kwargs):
    """(state, op(*args)): the op with fresh keys, and those keys as the state."""
    drawn: list[Value] = []

    def fresh():
        drawn.append(ctx.new_key())
        return drawn[-1]
    state_val, out_val = ctx.val or _results_of(ctx.node)
    out_val = out_val if out_val is not None else _op_val(ctx.node, 1)
    result = _wrapped(ctx, op)(_KeyedContext(ctx, out_val, fresh), *args, **kwargs)
    size = state_val.shape[0] if state_val is not None and state_val.dim() == 1 else None
    return _encode(ctx, drawn, int(size) if isinstance(size, int) else None), result


def _op_val(node, first: int):
    """The fake results of the op a wrapper node runs (its arguments from ``first`` on), where
    torch recorded none: the op run on its arguments' fake values."""
    fake = torch.fx.node.map_arg((node.args[first:], node.kwargs), lambda n: n.meta.get("val"))
    return node.args[first - 1](*fake[0], **fake[1])


def _results_of(node) -> tuple:
    """(state, results) fake values of a wrapper node, read from its ``getitem`` users (torch
    leaves the wrapper's own ``val`` unset)."""
    found = [None, None]
    for user in node.users:
        if user.op == "call_function" and user.args[0] is node and user.args[1] in (0, 1):
            found[user.args[1]] = user.meta.get("val")
    return tuple(found)


def run_with_rng_state(ctx: TranslationContext, state, op, *args, **kwargs):
    """op(*args) drawing the keys ``state`` holds: the numbers the forward drew."""
    count = iter(range(1 << 30))
    val = ctx.val if ctx.val is not None else _op_val(ctx.node, 2)
    return _wrapped(ctx, op)(_KeyedContext(ctx, val, lambda: _decode(ctx, state, next(count))), *args, **kwargs)


TABLE = {
    "run_and_save_rng_state": run_and_save_rng_state,
    "run_with_rng_state": run_with_rng_state,
}
