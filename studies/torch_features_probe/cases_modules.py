"""The probe's scenarios about what modules bring to a compiled call: hooks, parametrizations,
tied weights, compiler.disable'd helpers, buffers, parameter and subclass inputs, train/eval
switching, freezing, threads, dtype moves after compiling (the contexts are cases.py's)."""

from __future__ import annotations

import threading

import torch
import torch.nn.functional as F
from torch import nn

from studies.torch_features_probe.common import _grads, _mlp, _train_step, _x, case


@case
def forward_hooks(compile):
    model = _mlp()
    seen = []
    model[0].register_forward_hook(lambda m, i, o: o * 0.5)
    model[2].register_forward_pre_hook(lambda m, i: (i[0] + 1.0,))
    model[1].register_forward_hook(lambda m, i, o: seen.append(o.shape[0]))
    out = _train_step(compile(model), model, _x(4, 8))
    return {**out, "hook_calls": torch.tensor(float(len(seen)))}


@case
def tensor_hook_clip(compile):
    model = _mlp()

    class Clipped(nn.Module):
        def __init__(self):
            super().__init__()
            self.m = model

        def forward(self, x):
            h = self.m[0](x)
            h.register_hook(lambda g: g.clamp(-1e-3, 1e-3))
            return self.m[2](self.m[1](h))
    wrapper = Clipped()
    return _train_step(compile(wrapper), model, _x(4, 8))


@case
def full_backward_hook(compile):
    model = _mlp()
    seen = []

    def hook(m, grad_in, grad_out):
        seen.append(grad_out[0].norm().item())
        return (grad_in[0] * 0.5,)
    model[1].register_full_backward_hook(hook)
    out = _train_step(compile(model), model, _x(4, 8))
    return {**out, "hook": torch.tensor(seen)}


def _parametrized(kind):
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 8), nn.Tanh(), nn.Linear(8, 8))
    if kind == "weight_norm":
        nn.utils.parametrizations.weight_norm(model[0])
    elif kind == "spectral_norm":
        nn.utils.parametrizations.spectral_norm(model[0])
    elif kind == "orthogonal":
        nn.utils.parametrizations.orthogonal(model[0])
    else:
        class Symmetric(nn.Module):
            def forward(self, w):
                return w.triu() + w.triu(1).transpose(0, 1)
        nn.utils.parametrize.register_parametrization(model[0], "weight", Symmetric())
    return model


def _param_case(kind):
    def scenario(compile):
        model = _parametrized(kind)
        compiled = compile(model)
        first = _train_step(compiled, model, _x(4, 8))
        model.zero_grad()
        second = _train_step(compiled, model, _x(4, 8, seed=3))  # spectral_norm's power iteration moves
        return {**first, **{"2." + k: v for k, v in second.items()}}
    scenario.__name__ = kind
    return scenario


for _kind in ("weight_norm", "spectral_norm", "orthogonal", "register_parametrization"):
    case(_param_case(_kind))


class _TiedLM(nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.emb = nn.Embedding(20, 8)
        self.mix = nn.Linear(8, 8)
        self.head = nn.Linear(8, 20, bias=False)
        self.head.weight = self.emb.weight

    def forward(self, ids):
        return self.head(torch.tanh(self.mix(self.emb(ids))))


@case
def tied_weights(compile):
    model = _TiedLM()
    compiled = compile(model)
    ids = torch.tensor([[1, 5, 7, 19], [0, 2, 2, 3]])
    out = compiled(ids)
    F.cross_entropy(out.flatten(0, 1), ids.flatten()).backward()
    opt = torch.optim.SGD(model.parameters(), lr=0.5)
    opt.step()
    again = compiled(ids)  # after the step: the shared weight moved once
    return {"out": out.detach(), **_grads(model), "after": again.detach(),
            "tied": torch.tensor(float(model.head.weight is model.emb.weight))}


@torch.compiler.disable
def _eager_helper(x):
    return torch.sort(x, -1).values * 2


@case
def compiler_disable(compile):
    def f(x, w):
        h = x @ w
        return _eager_helper(h).tanh() + h
    w = _x(8, 8, seed=2).requires_grad_()
    out = compile(f)(_x(4, 8), w)
    out.sum().backward()
    return {"out": out.detach(), "g.w": w.grad}


class _Counter(nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.lin = nn.Linear(8, 8)
        self.register_buffer("steps", torch.zeros((), dtype=torch.long))
        self.register_buffer("ema", torch.zeros(8))
        self.register_buffer("scratch", torch.ones(8), persistent=False)

    def forward(self, x):
        self.steps += 1
        y = self.lin(x) * self.scratch
        with torch.no_grad():
            self.ema.mul_(0.9).add_(0.1 * y.mean(0))
        return y - self.ema


@case
def buffer_mutation(compile):
    model = _Counter()
    compiled = compile(model)
    outs = {}
    for i in range(3):
        r = _train_step(compiled, model, _x(4, 8, seed=i))
        outs.update({f"{i}.{k}": v for k, v in r.items()})
        model.zero_grad()
    return {**outs, "steps": model.steps.clone().float(), "ema": model.ema.clone(),
            "keys": torch.tensor(float("scratch" in model.state_dict()))}


class _Tagged(torch.Tensor):
    pass


@case
def parameter_input(compile):
    p = nn.Parameter(_x(8, 8, seed=2))
    out = compile(lambda x, w: torch.tanh(x @ w))(_x(4, 8), p)
    out.sum().backward()
    return {"out": out.detach(), "g.w": p.grad}


@case
def subclass_input(compile):
    x = _x(4, 8).as_subclass(_Tagged)
    out = compile(lambda x: torch.tanh(x) * 2)(x)
    return {"out": out.as_subclass(torch.Tensor), "type": torch.tensor(float(type(out) is _Tagged))}


class _DropBN(nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.lin = nn.Linear(8, 8)
        self.bn = nn.BatchNorm1d(8)
        self.drop = nn.Dropout(0.5)

    def forward(self, x):
        return self.drop(self.bn(self.lin(x)))


def _dropout_check(model, x, t):
    """Dropout's mask is random (parity draws its own keys): its rate, and the kept values against
    batch-statistics BatchNorm scaled by 2, where eager's reference fills the dropped ones."""
    ref = F.batch_norm(model.lin(x), None, None, model.bn.weight, model.bn.bias, training=True) * 2
    rate = (t == 0).float().mean()
    return torch.cat([torch.where(t != 0, t, ref).detach().flatten(), (0.2 < rate < 0.8).float().reshape(1)])


@case
def train_eval_switch(compile):
    model = _DropBN()
    compiled = compile(model)
    x = _x(6, 8)
    outs = {}
    compiled.train()
    outs["train"] = _dropout_check(model, x, compiled(x))
    compiled.eval()
    outs["eval"] = compiled(x).detach()
    model.train()  # on the module itself
    outs["train2"] = _dropout_check(model, x, compiled(x))
    model.eval()
    outs["eval2"] = compiled(x).detach()
    outs["running_mean"] = model.bn.running_mean.clone()
    return outs


@case
def freeze_between_calls(compile):
    model = _mlp()
    compiled = compile(model)
    first = _train_step(compiled, model, _x(4, 8))
    model.zero_grad(set_to_none=True)
    model[0].requires_grad_(False)
    second = _train_step(compiled, model, _x(4, 8, seed=3))
    frozen = torch.tensor(float(model[0].weight.grad is None))
    model.zero_grad(set_to_none=True)
    with torch.no_grad():
        ev = compiled(_x(4, 8, seed=4))
    model[0].requires_grad_(True)
    third = _train_step(compiled, model, _x(4, 8, seed=5))
    return {**first, **{"2." + k: v for k, v in second.items()}, "frozen": frozen, "eval": ev,
            **{"3." + k: v for k, v in third.items()}}


@case
def threads(compile):
    f = compile(lambda x, w: torch.tanh(x @ w).sum(-1))
    w = _x(8, 8, seed=2)
    xs = [_x(4, 8, seed=i) for i in range(8)]
    results = [None] * len(xs)
    errors = []

    def work(i):
        try:
            for _ in range(3):
                results[i] = f(xs[i], w)
        except Exception as err:  # noqa: BLE001 - reported as the case's failure
            errors.append(err)
    pool = [threading.Thread(target=work, args=(i,)) for i in range(len(xs))]
    for t in pool:
        t.start()
    for t in pool:
        t.join()
    if errors:
        raise errors[0]
    return {f"x{i}": r for i, r in enumerate(results)}


@case
def to_float64_after(compile):
    model = _mlp()
    compiled = compile(model)
    a = compiled(_x(4, 8))
    compiled.to(torch.float64)
    b = compiled(_x(4, 8).double())
    return {"f32": a.detach(), "f64": b.detach(), "dtype": torch.tensor(float(b.dtype == torch.float64))}


@case
def half_after(compile):
    model = _mlp()
    compiled = compile(model)
    a = compiled(_x(4, 8))
    model.half()
    b = compiled(_x(4, 8).half())
    return {"f32": a.detach(), "f16": b.detach(), "dtype": torch.tensor(float(b.dtype == torch.float16))}


@case
def disable_method(compile):
    class WithEagerPart(nn.Module):
        def __init__(self):
            super().__init__()
            self.body = _mlp()

        @torch.compiler.disable
        def post(self, h):
            return h.sort(-1).values

        def forward(self, x):
            return self.post(self.body(x)).tanh()
    model = WithEagerPart()
    return _train_step(compile(model), model.body, _x(4, 8))


@case
def orthogonal_cayley(compile):
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 8), nn.Tanh(), nn.Linear(8, 8))
    nn.utils.parametrizations.orthogonal(model[0], orthogonal_map="cayley")
    return _train_step(compile(model), model, _x(4, 8))
