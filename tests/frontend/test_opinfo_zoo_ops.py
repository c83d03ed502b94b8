"""torch's OpInfo float32 samples for the ops the Hugging Face zoo uses (issue #17), through
``parity.compile(backend="reference")``, forward and (where the OpInfo supports autograd)
backward, against eager torch.

Which OpInfos: ``conformance/hf/aten_ops.json`` lists the zoo's aten ops (recorded from
every translated graph of its 48 architectures by ``scripts/build_aten_ops.py``), and
maps them to OpInfo entries (by the user-level
call, by name, or by tracing its samples). Every float32 sample of every mapped entry is a
case. By default one sample per entry, drawn with a fixed seed, runs (about a minute on
one core; CI runs this); the rest are marked ``slow`` and are collected only when asked for
with ``-m slow`` (about 4,300 more, some 30 minutes on one core: too long for CI), so that a
normal run's summary counts only real skips.

Tolerances: rtol = atol = 1e-5, or the OpInfo's own float32 override where it declares
one (the widest; ``opinfo_helpers.float32_tolerance``). Samples parity declines on
purpose are listed in :data:`REFUSED` (which samples, and why) and must be declined; a
known mismatch goes in :data:`XFAIL` with the measured error, as a strict xfail (none
now: the mismatches found were fixed in frontend/aten).
"""

import random

import pytest
import torch

from parity.conformance.hf.aten_ops import load
from parity.conformance.hf.opinfo import find_opinfo, float32_samples
from parity.ir.errors import ParityError

from .opinfo_helpers import EagerFallback, check_sample

QUICK = 1  # samples per OpInfo in the default run (drawn with SEED); the rest form the full set
SEED = 17


def _boolean_index(sample) -> bool:
    indices = sample.args[0] if sample.args else ()
    indices = indices if isinstance(indices, (tuple, list)) else (indices,)
    return any(isinstance(t, torch.Tensor) and t.dtype == torch.bool for t in indices)


def _offset_into_the_input_or_outside(sample) -> bool:
    """as_strided given a storage_offset (it counts from the start of the input's storage, which
    a later call may move: Dynamo does not guard it), or reaching storage outside its input."""
    x, (size, stride, *rest) = sample.input, sample.args
    offset = rest[0] if rest else sample.kwargs.get("storage_offset")
    if offset is not None:
        return True
    low = x.storage_offset()
    high = low + sum((n - 1) * st for n, st in zip(x.shape, x.stride()))
    reach = low + sum((n - 1) * st for n, st in zip(size, stride))
    return 0 not in size and reach > high


_MOVABLE = "a storage_offset into a graph input counts from its storage's start, which a later call may move"
#: OpInfo → (which samples parity declines, why). Such a sample must be declined (a
#: ParityError, or an EagerFallback where Dynamo itself leaves the op to eager torch);
#: one that runs instead fails, so the list cannot go stale.
REFUSED = {
    # A boolean mask is aten.nonzero: an output size that depends on the data. Dynamo does not
    # capture it (capture_dynamic_output_shape_ops is off) and runs it in eager torch.
    # index_put's forward and x's gradient translate with a mask (test_scatter_family.py); the
    # values' gradient, grad[mask], has the data-dependent size.
    "index_put": (_boolean_index, "the values' gradient grad[mask] has a data-dependent shape (aten.nonzero), "
                                  "run by torch"),
    "as_strided.partial_views": (_offset_into_the_input_or_outside, _MOVABLE),
    "as_strided": (_offset_into_the_input_or_outside, _MOVABLE),
    "as_strided_scatter": (lambda s: s.kwargs.get("storage_offset", s.args[3] if len(s.args) > 3 else None) is not None,
                           _MOVABLE),
    # tensor repeats: without output_size the size depends on the data (Dynamo runs it in torch);
    # with it, aten.repeat_interleave.Tensor has no translation yet (the zoo repeats by an int)
    "repeat_interleave": (lambda s: isinstance(s.kwargs.get("repeats", s.args[0] if s.args else None), torch.Tensor),
                          "repeats given as a tensor: a data-dependent size, or aten.repeat_interleave.Tensor"),
    "__getitem__": (_boolean_index, "a boolean mask gives a data-dependent shape (aten.nonzero), run by torch"),
}

#: OpInfos whose op is torch's seed-setting wrapper (a lambda Dynamo cannot trace through
#: freeze_rng_state): the function it wraps, called directly.
SEEDED = {
    "nn.functional.dropout": torch.nn.functional.dropout,
    "nn.functional.scaled_dot_product_attention": torch.nn.functional.scaled_dot_product_attention,
}

#: OpInfo → which samples draw random numbers. parity draws from its own counter-based key,
#: not torch's generator, so those are compared by shape and dtype only.
RANDOM = {
    "nn.functional.dropout": lambda s: s.kwargs.get("p", 0.5) > 0 and s.kwargs.get("training", True),
    "nn.functional.scaled_dot_product_attention": lambda s: s.kwargs.get("dropout_p", 0.0) > 0,
}

#: OpInfos whose values torch leaves undefined (uninitialized memory): shapes and dtypes only.
UNDEFINED = {"empty_like", "empty_permuted", "new_empty"}

#: (OpInfo, sample index) → the measured error and why it is not fixed here (strict xfail).
XFAIL: dict[tuple[str, int], str] = {}

#: zoo aten ops that no OpInfo's traced samples produce, and why.
UNMAPPED: dict[str, str] = {
    "aten._native_batch_norm_legit_no_training.default":
        "eval-mode batch norm; nn.functional.batch_norm's samples reach it through parity.compile "
        "(test_compiled_samples_reach), make_fx decomposes it",
    "aten._scaled_dot_product_flash_attention_for_cpu.default":
        "the fused CPU attention parity keeps whole; the OpInfo's samples take the math path",
    "aten._scaled_dot_product_flash_attention_for_cpu_backward.default": "its backward, likewise",
    "aten._weight_norm_interface_backward.default": "weight_norm's backward (wav2vec2's positional conv): no OpInfo",
    "aten.copy.default": "AOTAutograd's write-back of a mutated input (batch norm's running stats): no OpInfo",
    "transformers.grouped_mm_fallback.default": "transformers' own MoE custom op, not torch's",
    "transformers.grouped_mm_fallback_backward.default": "transformers' own MoE custom op, not torch's",
}

#: zoo aten ops make_fx tracing does not show but the OpInfo's samples reach through
#: parity.compile: (OpInfo, sample indices) that must translate them.
COMPILED_ONLY = {
    "aten._native_batch_norm_legit_no_training.default": ("nn.functional.batch_norm", range(4)),
    "aten._native_batch_norm_legit_functional.default": ("nn.functional.batch_norm", range(4)),
}


def _samples(key):
    info = find_opinfo(key)
    torch.manual_seed(SEED)
    return info, float32_samples(info)


def _cases():
    cases = []
    for key in load()["opinfo"]:
        info, samples = _samples(key)
        quick = set(random.Random(f"{SEED}:{key}").sample(range(len(samples)), min(QUICK, len(samples))))
        for i, sample in enumerate(samples):
            marks = [] if i in quick else [pytest.mark.slow]
            if (key, i) in XFAIL:
                marks.append(pytest.mark.xfail(strict=True, reason=XFAIL[(key, i)]))
            cases.append(pytest.param(key, i in quick, info, sample, id=f"{key}-{i}", marks=marks))
    return cases


CASES = _cases()


def _full_set_selected(config) -> bool:
    """Only ``-m slow`` (or an expression asking for slow) runs the full set; CI runs the default."""
    expr = config.option.markexpr or ""
    return "slow" in expr and "not slow" not in expr


def pytest_generate_tests(metafunc):
    """The sample cases: the quick ones always, the full set only when ``-m slow`` selects it."""
    if "sample" in metafunc.fixturenames and "quick" in metafunc.fixturenames:
        full = _full_set_selected(metafunc.config)
        metafunc.parametrize("key,quick,info,sample", [case for case in CASES if full or case.values[1]])


def test_the_mapping_covers_the_zoo():
    """Every aten op of the zoo maps to at least one OpInfo, unless listed here with why."""
    usage = load()
    unmapped = {op for op, keys in usage["op_to_opinfo"].items() if not keys}
    assert unmapped == set(UNMAPPED), f"zoo ops without an OpInfo changed: {sorted(unmapped ^ set(UNMAPPED))}"
    assert len(usage["ops"]) >= 90 and len(usage["opinfo"]) >= 100


@pytest.mark.parametrize("op", sorted(COMPILED_ONLY))
def test_compiled_samples_reach(op):
    """The OpInfo samples said to cover an op only under parity.compile do translate it."""
    from parity.conformance.hf.aten_ops import recording

    key, indices = COMPILED_ONLY[op]
    info, samples = _samples(key)
    graphs = []
    with recording(graphs):
        for i in indices:
            check_sample(info, samples[i])
    assert op in {name for _, names in graphs for name in names}


def test_opinfo_sample_matches_eager(key, quick, info, sample):
    random_draws = RANDOM.get(key, lambda s: False)(sample)
    refused, why = REFUSED.get(key, (lambda s: False, ""))
    options = dict(op=SEEDED.get(key), values=key not in UNDEFINED and not random_draws)
    if refused(sample):
        with pytest.raises((ParityError, EagerFallback)):
            check_sample(info, sample, **options)
        pytest.skip(f"declined as listed in REFUSED: {why}")
    check_sample(info, sample, **options)


def test_the_harness_sees_refusals_and_fallbacks():
    """check_sample is strict: an untranslatable op raises, and a data-dependent one that
    Dynamo runs eagerly is reported, never compared as if parity had computed it."""
    from parity.frontend.errors import UnsupportedAtenOp

    info, samples = _samples("nn.functional.grid_sample")
    bicubic = next(s for s in samples if s.kwargs.get("mode") == "bicubic")
    with pytest.raises(UnsupportedAtenOp, match="grid_sampler_2d"):
        check_sample(info, bicubic)
    info, samples = _samples("index_put")
    masked = next(s for s in samples if _boolean_index(s))
    with pytest.raises(EagerFallback, match="nonzero"):
        check_sample(info, masked)
