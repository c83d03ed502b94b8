"""The probe's scenarios (the contexts a compiled call runs in: checkpointing, autocast, grad
modes, torch.func, dynamic marks; cases_modules.py: what modules bring): each is ``scenario(compile) -> {name: tensor}``, where ``compile(obj,
**options)`` is eager (the identity), ``torch.compile(backend="eager")`` or ``parity.compile``.
A scenario builds its own model (seeded), calls the compiled object one or more times and
returns every output and gradient it wants compared with eager's."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.checkpoint import checkpoint

from studies.torch_features_probe import cases_modules  # noqa: F401 - registers the module scenarios
from studies.torch_features_probe.common import CASES, _grads, _mlp, _train_step, _x, case  # noqa: F401


class _Checkpointed(nn.Module):
    def __init__(self):
        super().__init__()
        self.a, self.b = _mlp(0), _mlp(1)

    def forward(self, x):
        h = checkpoint(self.a, x, use_reentrant=False)
        return self.b(torch.tanh(h))


@case
def checkpoint_train(compile):
    model = _Checkpointed()
    return _train_step(compile(model), model, _x(4, 8))


@case
def autocast_inside(compile):
    def f(x, w):
        with torch.autocast("cpu", dtype=torch.bfloat16):
            y = x @ w
        return y.float().relu().sum(-1)
    x, w = _x(4, 8), _x(8, 8, seed=2).requires_grad_()
    out = compile(f)(x, w)
    out.sum().backward()
    return {"out": out.detach(), "g.w": w.grad}


def _under_autocast(compile):
    """A compiled MLP, its module, and its output for one call under CPU bf16 autocast."""
    model = _mlp()
    compiled = compile(model)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        return compiled, model, compiled(_x(4, 8))


@case
def autocast_around(compile):
    compiled, _, a = _under_autocast(compile)
    b = compiled(_x(4, 8))  # and without, after
    return {"autocast": a.detach(), "plain": b.detach(), "dtype": torch.tensor(float(a.dtype == torch.bfloat16))}


@case
def autocast_around_fn(compile):
    f = compile(lambda x, w: torch.relu(x @ w))
    x, w = _x(4, 8), _x(8, 8, seed=2)
    plain = f(x, w)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        a = f(x, w)
    return {"plain": plain, "autocast": a, "dtype": torch.tensor(float(a.dtype == torch.bfloat16))}


def _mode_around(mode):
    def scenario(compile):
        model = _mlp()
        compiled = compile(model)
        x = _x(4, 8)
        with mode():
            a = compiled(x)
        out = _train_step(compiled, model, x)  # then a training call
        return {"in_mode": a.clone(), "in_mode_rg": torch.tensor(float(a.requires_grad)), **out}
    scenario.__name__ = f"{mode.__name__}_around"
    return scenario


case(_mode_around(torch.no_grad))
case(_mode_around(torch.inference_mode))


@case
def inference_mode_fn(compile):
    f = compile(lambda x, w: torch.tanh(x @ w) * 2)
    x, w = _x(4, 8), _x(8, 8, seed=2)
    plain = f(x, w)
    with torch.inference_mode():
        a = f(x, w)
    with torch.no_grad():
        b = f(x, w)
    wg = w.clone().requires_grad_()
    c = f(x, wg)
    c.sum().backward()
    return {"plain": plain, "inference": a.clone(), "no_grad": b, "grad_out": c.detach(), "g.w": wg.grad,
            "flags": torch.tensor([float(a.is_inference()), float(b.requires_grad), float(c.requires_grad)])}


@case
def no_grad_inside(compile):
    def f(x, w):
        with torch.no_grad():
            scale = (x @ w).abs().amax()
        return (x @ w) / scale
    x, w = _x(4, 8), _x(8, 8, seed=2).requires_grad_()
    out = compile(f)(x, w)
    out.square().sum().backward()
    return {"out": out.detach(), "g.w": w.grad}


@case
def functional_call(compile):
    model = _mlp()
    params = {n: p.detach().clone().requires_grad_() for n, p in model.named_parameters()}

    def f(params, x):
        return torch.func.functional_call(model, params, (x,))
    out = compile(f)(params, _x(4, 8))
    out.square().mean().backward()
    return {"out": out.detach(), **{"g." + n: p.grad for n, p in params.items()}}


@case
def func_grad(compile):
    def loss(w, x):
        return torch.tanh(x @ w).square().sum()

    def f(w, x):
        return torch.func.grad(loss)(w, x)
    return {"grad": compile(f)(_x(8, 8, seed=2), _x(4, 8))}


@case
def func_vmap(compile):
    def f(w, xs):
        return torch.func.vmap(lambda x: torch.tanh(w @ x))(xs)
    w = _x(8, 8, seed=2).requires_grad_()
    out = compile(f)(w, _x(5, 8))
    out.sum().backward()
    return {"out": out.detach(), "g.w": w.grad}


def _dyn_case(how, dynamic=None, fullgraph=False):
    def scenario(compile):
        f = compile(lambda x, w: torch.tanh(x @ w).sum(0), dynamic=dynamic, fullgraph=fullgraph)
        w = _x(8, 8, seed=2)
        outs = {}
        for n in (3, 5, 7, 9):
            x = _x(n, 8, seed=n)
            if how == "mark":
                torch._dynamo.mark_dynamic(x, 0)
            elif how == "maybe":
                torch._dynamo.maybe_mark_dynamic(x, 0)
            outs[f"n{n}"] = f(x, w)
        return outs
    scenario.__name__ = f"{how}_dynamic" + ("" if dynamic is None else f"_{dynamic}") + ("_fullgraph" if fullgraph else "")
    return scenario


for _args in (("mark",), ("maybe",), ("mark", None, True), ("none", True), ("none", False), ("mark", False),
              ("none", True, True)):
    case(_dyn_case(*_args))


class _CheckpointedDropout(nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.scale = nn.Parameter(torch.rand(8) + 0.5)

    def forward(self, x):
        return checkpoint(lambda t: F.dropout(t * self.scale, 0.5, training=True), x, use_reentrant=False)


@case
def checkpoint_dropout(compile):
    """The recomputed dropout must draw the forward's mask: the gradient by the kept mask."""
    model = _CheckpointedDropout()
    x, w = _x(16, 8).abs() + 0.1, _x(16, 8, seed=2)
    out = compile(model)(x)
    (out * w).sum().backward()
    kept = (out != 0).float()
    expected = (kept * 2 * x * w).sum(0)  # d/d scale of sum(w * mask * 2 * x * scale)
    return {"grad_matches_mask": torch.tensor(float(torch.allclose(model.scale.grad, expected, rtol=1e-5, atol=1e-5))),
            "rate_ok": torch.tensor(float(0.3 < float(kept.mean()) < 0.7))}


@case
def grad_accumulation(compile):
    model = _mlp()
    compiled = compile(model)
    for seed in (1, 2, 3):  # no zero_grad: the gradients add up
        compiled(_x(4, 8, seed=seed)).square().mean().backward()
    return _grads(model)


@case
def checkpoint_dropout_dynamic(compile):
    model = _CheckpointedDropout()
    compiled = compile(model, dynamic=True)
    found = {}
    for n in (16, 24):
        model.zero_grad()
        x, w = _x(n, 8, seed=n).abs() + 0.1, _x(n, 8, seed=2)
        out = compiled(x)
        (out * w).sum().backward()
        expected = ((out != 0).float() * 2 * x * w).sum(0)
        found[f"n{n}"] = torch.tensor(float(torch.allclose(model.scale.grad, expected, rtol=1e-5, atol=1e-5)))
    return found


@case
def autocast_train(compile):
    _, model, out = _under_autocast(compile)
    out.float().square().mean().backward()
    return {"out": out.detach(), **{k: v.bfloat16() for k, v in _grads(model).items()}}


@case
def inference_mode_inside(compile):
    def f(x, w):
        with torch.inference_mode():
            y = torch.tanh(x @ w)
        return y * 2
    return {"out": compile(f)(_x(4, 8), _x(8, 8, seed=2))}


class _Reentrant(nn.Module):
    def __init__(self):
        super().__init__()
        self.a, self.b = _mlp(0), _mlp(1)

    def forward(self, x):
        return self.b(torch.tanh(checkpoint(self.a, x, use_reentrant=True)))


@case
def checkpoint_reentrant(compile):
    model = _Reentrant()
    return _train_step(compile(model), model, _x(4, 8).requires_grad_())
