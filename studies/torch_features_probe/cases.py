"""The probe's scenarios: each is ``scenario(compile) -> {name: tensor}``, where ``compile(obj,
**options)`` is eager (the identity), ``torch.compile(backend="eager")`` or ``parity.compile``.
A scenario builds its own model (seeded), calls the compiled object one or more times and
returns every output and gradient it wants compared with eager's."""

from __future__ import annotations

import threading

import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.checkpoint import checkpoint

CASES: dict = {}


def case(fn):
    CASES[fn.__name__] = fn
    return fn


def _x(*shape, seed=1):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed))


def _mlp(seed=0, d=8):
    torch.manual_seed(seed)
    return nn.Sequential(nn.Linear(d, 16), nn.GELU(), nn.Linear(16, d))


def _grads(model, prefix="g.") -> dict:
    return {prefix + n: p.grad.clone() for n, p in model.named_parameters() if p.grad is not None}


def _train_step(compiled, model, x) -> dict:
    out = compiled(x)
    out.square().mean().backward()
    return {"out": out.detach(), **_grads(model)}


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
