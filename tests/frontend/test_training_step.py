"""The whole training step in one compiled function: forward, ``loss.backward()``,
``clip_grad_norm_``, ``optimizer.step()``, an LR scheduler step and ``zero_grad()``
(docs/frontend.md, "The whole training step").

Every optimizer variant runs N steps three ways from the same weights and batches: compiled,
eager float32 and eager float64 (the oracle). "Eager" is torch's own kernels on the program
Dynamo captures (``torch.compile(backend="eager")``): while compiling, ``torch.optim`` takes
another branch (Adam's bias corrections ``1 - beta ** step`` become float32 tensor arithmetic
instead of Python floats), so any compiler's Adam differs from an uncompiled one by more than
rounding (docs/frontend.md, "The whole training step"). The parameters and every optimizer state tensor
(``exp_avg``, ``exp_avg_sq``, ``momentum_buffer``, ``step``) must be as close to the oracle
as eager's own float32 result is, within :data:`FACTOR`. Why a factor and not equality: the
compiled step computes the same arithmetic with different but in-contract roundings (Dynamo
turns ``addcdiv_`` into a fused multiply-add, eager's kernel rounds three times; a matmul may
sum in another order), each at most an ULP per operation; two such float32 computations of
one function sit at the same distance from the exact result, give or take that distance (the
same rule and factor as the Hugging Face zoo, conformance/hf/check.py's ``NOISE_FACTOR``).
Eager's distance is taken as at least N ULP of the tensor's float32 scale: each of N steps
updates a tensor with correctly rounded operations (<= 1 ULP each, the contract), so a result
N ULP off is in contract even where eager happens to land nearer (measured on onnx: eager's
float32 parameters sit 0.4-1.2 ULP from float64 after 5 SGD steps, the compiled ones up to
3.1 ULP). Under bf16 autocast the gradients are rounded to bfloat16 (<= 1 bfloat16 ULP each,
the contract for float16/bfloat16 elementwise ops), so the floor is N bfloat16 ULP: both runs
sit thousands of float32 ULP from float64 there (Adam's ``exp_avg_sq`` of the output bias:
eager 5.0e-7, compiled 1.7e-6, a three-element tensor of squared bfloat16 gradients). A count
(``step``) is exact in all three runs and must stay exact. The losses are compared in float32
only: under autocast each is one bfloat16-rounded scalar.
"""

from __future__ import annotations

import itertools
import warnings

import pytest
import torch

import parity
from parity.conformance.hf.check import NOISE_FACTOR as FACTOR

pytestmark = pytest.mark.slow  # each case compiles a forward, backward and optimizer graphs (20-110 s)

STEPS = 5
OPTIMIZERS = {
    "sgd_momentum": (torch.optim.SGD, {"momentum": 0.9}),
    "sgd_nesterov": (torch.optim.SGD, {"momentum": 0.9, "nesterov": True}),
    "adam": (torch.optim.Adam, {}),
    "adamw": (torch.optim.AdamW, {"weight_decay": 0.1}),
}
IMPLEMENTATIONS = {"foreach": {"foreach": True}, "fused": {"fused": True}}
PRECISIONS = ("f32", "bf16_autocast")
EVERY_VARIANT = list(itertools.product(OPTIMIZERS, IMPLEMENTATIONS, PRECISIONS))


def _model(dtype: torch.dtype) -> torch.nn.Module:
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Tanh(), torch.nn.Linear(8, 3))
    return model.to(dtype)


def _batches(dtype: torch.dtype) -> list[tuple[torch.Tensor, torch.Tensor]]:
    g = torch.Generator().manual_seed(1)
    return [(torch.randn(5, 4, generator=g).to(dtype), torch.randn(5, 3, generator=g).to(dtype))
            for _ in range(STEPS)]


def _trainer(optimizer: str, implementation: str, dtype: torch.dtype, autocast: bool, lr=0.05):
    """(model, optimizer, the step function) for one variant: the whole step in one function."""
    model = _model(dtype)
    cls, kwargs = OPTIMIZERS[optimizer]
    opt = cls(model.parameters(), lr=lr, **kwargs, **IMPLEMENTATIONS[implementation])
    scheduler = torch.optim.lr_scheduler.StepLR(opt, step_size=3, gamma=0.5)

    def step(x, y):
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=autocast):
            out = model(x)
        loss = torch.nn.functional.mse_loss(out.to(y.dtype), y)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        scheduler.step()
        opt.zero_grad()
        return loss

    return model, opt, step


def _state(model: torch.nn.Module, opt: torch.optim.Optimizer) -> dict[str, torch.Tensor]:
    """Every parameter and optimizer state tensor, by a name that says which."""
    out = {}
    for name, p in model.named_parameters():
        out[name] = p.detach()
        for key, value in opt.state[p].items():
            out[f"{name}.{key}"] = torch.as_tensor(value).detach()
    return out


def _train(step, batches) -> list[torch.Tensor]:
    return [step(x, y).detach() for x, y in batches]


def run_variant(backend: str, optimizer: str, implementation: str, precision: str):
    """(compiled, eager float32, eager float64) states after STEPS steps, and the losses."""
    autocast = precision == "bf16_autocast"
    results = []
    for compiled, dtype in ((True, torch.float32), (False, torch.float32), (False, torch.float64)):
        model, opt, step = _trainer(optimizer, implementation, dtype, autocast and dtype is torch.float32)
        torch._dynamo.reset()
        step = parity.compile(step, backend=backend) if compiled else torch.compile(step, backend="eager")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the graph breaks around backward() and the optimizer
            losses = _train(step, _batches(dtype))
        results.append((_state(model, opt), losses))
    return results


def farther_than_eager(got: dict, eager: dict, exact: dict, rounding: torch.dtype = torch.float32) -> list[str]:
    """The tensors of ``got`` farther from ``exact`` than FACTOR times eager's own distance (at
    least STEPS ULP of ``rounding``, the dtype the step's values are rounded to)."""
    bad = []
    assert got.keys() == eager.keys() == exact.keys()
    for name, e in eager.items():
        g, e, x = got[name].double(), e.double(), exact[name].double()
        assert g.shape == e.shape, name
        own = float((e - x).abs().max())
        err = float((g - x).abs().max())
        floor = STEPS * float(x.abs().max()) * torch.finfo(rounding).eps
        if not err <= FACTOR * max(own, floor):
            bad.append(f"{name}: |compiled - float64| = {err:.3g} > {FACTOR} x max(|eager - float64| = {own:.3g}, "
                       f"{STEPS} ULP = {floor:.3g})")
    return bad


def _check(backend, optimizer, implementation, precision):
    (got, got_losses), (eager, eager_losses), (exact, exact_losses) = run_variant(
        backend, optimizer, implementation, precision)
    bad = farther_than_eager(got, eager, exact, torch.bfloat16 if precision == "bf16_autocast" else torch.float32)
    if precision == "f32":
        bad += farther_than_eager({"losses": torch.stack(got_losses)}, {"losses": torch.stack(eager_losses)},
                                  {"losses": torch.stack(exact_losses)})
    assert not bad, f"{backend} {optimizer} {implementation} {precision}:\n" + "\n".join(bad)
    # the steps did move the weights (a step that changed nothing would pass the rule above
    # only if eager changed nothing too)
    first = _state(_model(torch.float32), torch.optim.SGD(_model(torch.float32).parameters()))
    assert any(not torch.equal(got[name], first[name]) for name in first)


def _variant(optimizer, implementation, precision, *marks):
    return pytest.param(optimizer, implementation, precision, marks=marks)


# CI's subset: each optimizer, foreach and fused, and bf16 autocast, at least once on onnx
CI_VARIANTS = [("sgd_momentum", "foreach", "f32"), ("sgd_nesterov", "foreach", "f32"), ("adam", "foreach", "f32"),
               ("adamw", "foreach", "bf16_autocast"), ("adamw", "fused", "f32")]


@pytest.mark.parametrize(("optimizer", "implementation", "precision"), [_variant(*v) for v in CI_VARIANTS])
def test_representative_variants_on_onnx(optimizer, implementation, precision):
    _check("onnx", optimizer, implementation, precision)


@pytest.mark.parametrize(("optimizer", "implementation", "precision"),
                         [_variant(*v, pytest.mark.matrix) for v in EVERY_VARIANT if v not in CI_VARIANTS])
def test_every_other_variant_on_onnx(optimizer, implementation, precision):
    _check("onnx", optimizer, implementation, precision)


@pytest.mark.parametrize(("optimizer", "implementation", "precision"),
                         [("adamw", "foreach", "f32"),
                          pytest.param("sgd_nesterov", "foreach", "f32", marks=pytest.mark.matrix),
                          pytest.param("adam", "foreach", "bf16_autocast", marks=pytest.mark.matrix),
                          pytest.param("sgd_momentum", "fused", "f32", marks=pytest.mark.matrix)])
def test_variants_on_xla(optimizer, implementation, precision):
    _check("xla", optimizer, implementation, precision)


@pytest.mark.matrix
def test_adamw_on_inductor():
    _check("inductor", "adamw", "foreach", "f32")


@pytest.mark.matrix
def test_adam_on_auto():
    _check("auto", "adam", "foreach", "f32")


def test_sgd_on_triton_through_its_interpreter():
    from parity.backends.registry import get_backend

    if "cpu" not in get_backend("triton").available_devices():
        pytest.skip("triton has no CPU device in this process: run with TRITON_INTERPRET=1 (scripts/test.sh sets it)")
    _check("triton", "sgd_momentum", "foreach", "f32")


@pytest.mark.matrix
def test_reference_runs_the_step_too():
    _check("reference", "adamw", "foreach", "f32")


# -- an LR scheduler and recompiles ---------------------------------------------------------


def _captures() -> int:
    return torch._dynamo.utils.counters["stats"]["unique_graphs"]


def _captures_per_step(opt_kwargs: dict, lr, steps: int, record: list | None = None, dynamic=None) -> list[int]:
    model = _model(torch.float32)
    opt = torch.optim.AdamW(model.parameters(), lr=lr, **opt_kwargs)
    scheduler = torch.optim.lr_scheduler.LambdaLR(opt, lambda epoch: 0.9**epoch)

    @parity.compile(backend="onnx", dynamic=dynamic)
    def step(x, y):
        loss = torch.nn.functional.mse_loss(model(x), y)
        loss.backward()
        opt.step()
        scheduler.step()
        opt.zero_grad()
        return loss

    per_step = []
    g = torch.Generator().manual_seed(1)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for _ in range(steps):
            before = _captures()
            step(torch.randn(5, 4, generator=g), torch.randn(5, 3, generator=g))
            per_step.append(_captures() - before)
    if record is not None:
        record.extend(caught)
    assert float(opt.param_groups[0]["lr"]) == pytest.approx(0.05 * 0.9**steps)  # the schedule ran
    return per_step


@pytest.mark.parametrize("opt_kwargs", [{}, {"foreach": True, "capturable": True}], ids=["for-loop", "foreach"])
def test_a_tensor_lr_compiles_the_optimizer_step_once(opt_kwargs):
    """A scheduler writes a tensor lr in place (``fill_``), so the captured step reads it as an
    input: no capture after the first steps (the first step and the second, which finds the
    optimizer's state, each capture; foreach needs ``capturable=True`` for a tensor lr, torch's rule)."""
    per_step = _captures_per_step(opt_kwargs, torch.tensor(0.05), STEPS)
    assert per_step[2:] == [0] * (STEPS - 2), per_step


def test_a_float_lr_becomes_symbolic_after_its_first_change():
    """By default (automatic dynamic) the float lr the scheduler changes becomes a graph input at
    the next capture: no capture per value, no recompile limit."""
    caught: list = []
    per_step = _captures_per_step({}, 0.05, 10, caught)
    assert sum(per_step[2:]) == 0, per_step
    assert not [w for w in caught if type(w.message).__name__ == "RecompileLimitWarning"]


def test_a_float_lr_recompiles_per_value_and_the_limit_warning_says_what_to_do():
    """With dynamic=False a Python float lr is a constant of the captured step: each new value the
    scheduler sets recompiles the optimizer's step, until Dynamo's recompile limit (8); then the
    step runs in eager torch, and parity's warning names the lr guard and the fix."""
    caught: list = []
    per_step = _captures_per_step({}, 0.05, 10, caught, dynamic=False)
    assert all(n >= 1 for n in per_step[:8]), per_step
    assert per_step[-1] == 0
    limit = [w for w in caught if type(w.message).__name__ == "RecompileLimitWarning"]
    assert len(limit) == 1, [str(w.message) for w in caught]
    message = str(limit[0].message)
    assert "param_groups[0]['lr']" in message and "a tensor in place of a changing Python number" in message
