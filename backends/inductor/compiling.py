"""Calling Inductor: an IR graph's FX module compiled by ``compile_fx`` with parity's settings, on a
fresh thread, into a :class:`.direct_call.Kernel` (static shapes) or a :class:`.symbolic.DynamicKernel`.

backend.py decides what to compile and when; this module is how.

Example::

    >>> import numpy as np, torch
    >>> from parity.ir import GraphBuilder, f32
    >>> b = GraphBuilder()
    >>> x = b.input(f32[3])
    >>> kernel = in_fresh_thread(compile_kernel, b.build([b.add(x, x)]), "cpu", ((3,),))
    >>> kernel([torch.tensor([1.0, 2.0, 3.0])])[0].tolist()
    [2.0, 4.0, 6.0]
"""

from __future__ import annotations

import contextlib
import warnings
from concurrent.futures import ThreadPoolExecutor

import torch

from ...ir.graph import Graph
from ..compiler_caches import inductor_header_settings, use_private_inductor_cache
from .control import examples_for
from .direct_call import Kernel, compile_direct
from .in_place import write_into_inputs
from .lowering import to_fx
from .one_library import one_library_per_graph
from .symbolic import DynamicKernel, compile_symbolic

# Inductor settings for every compile (patched around it, never set globally):
# - compile_threads=1: no pool of compile worker processes (their start-up costs more than
#   it saves on graphs of a few kernels, and parity compiles graphs one at a time);
# - emulate_precision_casts: a float16/bfloat16 value is rounded after every IR op, as the
#   IR rounds each op's result, even where Inductor fuses ops into one kernel.
INDUCTOR_CONFIG = {"compile_threads": 1, "emulate_precision_casts": True}

# Inductor warns "does not support code generation for complex operators" on every compile of
# complex code (once per process: the warning function is cached). parity already runs complex
# ops as eager ATen kernels by design (docs/backends/inductor.md), so the warning tells the user
# nothing they can act on; exactly this message is ignored around parity's compile.
COMPLEX_CODEGEN_WARNING = r"Torchinductor does not support code generation for complex operators"
# Importing Inductor's compile_fx imports torch.jit code that warns of its own deprecation (torch 2.13)
SCRIPT_METHOD_WARNING = r"`torch\.jit\.script_method` is deprecated"

def in_fresh_thread(fn, *args):
    """``fn(*args)`` on a new thread: parity may call an executable for the first time from
    inside AOTAutograd's compiled function (its autograd.Function's forward), and torch's
    thread-local dispatch state there (functionalization, fake and grad modes, the tracing
    context) must not reach this separate trace and compile."""
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="parity-inductor") as pool:
        return pool.submit(fn, *args).result()


def inductor_compile(module: torch.fx.GraphModule, examples: list[torch.Tensor], for_a_program: bool = False):
    """``compile_fx`` of ``module`` for ``examples``, with parity's Inductor settings and cache, as
    a function of the argument list (called without AOTAutograd's idle wrapper: direct_call.py).
    ``for_a_program``: a static graph's code is written to Inductor's FX graph cache too, when
    Inductor's own switch for that cache is on (:func:`with_shape_env`)."""
    from torch._inductor import config

    with warnings.catch_warnings():  # torch's own import of torch.jit.script_method, not the user's code
        warnings.filterwarnings("ignore", message=SCRIPT_METHOD_WARNING, category=DeprecationWarning)
        from torch._inductor.compile_fx import compile_fx

    use_private_inductor_cache()  # under parity's checked cache root, unless the user chose one
    # catch_warnings swaps the process-wide filter list: it sits here, inside the compile
    # thread's function, while the calling thread waits on the result (in_fresh_thread).
    settings = {**INDUCTOR_CONFIG, **bit_mixing_settings(module), **inductor_header_settings()}
    context = contextlib.nullcontext()
    if for_a_program and config.fx_graph_cache:
        context, examples = with_shape_env(examples)
    with config.patch(settings), warnings.catch_warnings(), one_library_per_graph(), context:
        warnings.filterwarnings("ignore", message=COMPLEX_CODEGEN_WARNING, category=UserWarning)
        return compile_direct(module, examples, compile_fx)


def with_shape_env(examples: list) -> tuple:
    """``(context, examples)`` for the compile of a graph of real (static) examples: a tracing
    context whose fake mode has a ShapeEnv, and the examples as that mode's fake tensors of the
    same (static) sizes. Inductor's FX graph cache is bypassed ("No shape env") without a ShapeEnv,
    so a new process would generate every static graph's code again; real examples under such a
    mode would be made symbolic by AOTAutograd (dynamic kernels for static graphs). Examples that
    are fake already (a symbolic graph's, symbolic.py; a loop's, control.py) carry their own mode."""
    from torch._guards import TracingContext, tracing
    from torch._subclasses.fake_tensor import FakeTensor, FakeTensorMode
    from torch.fx.experimental.symbolic_shapes import ShapeEnv

    if any(isinstance(e, FakeTensor) for e in examples):
        return contextlib.nullcontext(), examples
    mode = FakeTensorMode(shape_env=ShapeEnv(), static_shapes=True)
    fakes = [mode.from_tensor(e, static_shapes=True) if isinstance(e, torch.Tensor) else e for e in examples]
    return tracing(TracingContext(mode)), fakes


# A random draw is Threefry's 20 rounds of add, rotate (two shifts) and xor, each value read
# by the next round twice. Inductor inlines a multi-use value until its expression passes
# realize_opcount_threshold (30 ops), re-expanding shared subexpressions at each use: one
# random_bits of 64 elements generated 29,598 expressions and took 59 s to compile; with 8,
# 1,821 and ~30 s (most of it g++). The realized values stay inside the one fused kernel.
_BIT_MIXING_OPS = frozenset({torch.ops.aten.bitwise_xor.Tensor, torch.ops.aten.bitwise_left_shift.Tensor,
                             torch.ops.aten.bitwise_right_shift.Tensor})
_BIT_MIXING_NODES = 16  # fewer than one Threefry round's worth never blows up
_BIT_MIXING_CONFIG = {"realize_opcount_threshold": 8}


def bit_mixing_settings(module: torch.fx.GraphModule) -> dict:
    """Inductor settings for ``module``: a lower inlining threshold where it mixes bits."""
    count = sum(node.op == "call_function" and node.target in _BIT_MIXING_OPS for node in module.graph.nodes)
    return _BIT_MIXING_CONFIG if count >= _BIT_MIXING_NODES else {}


def compile_symbolic_kernel(graph: Graph, device: str, sizes: dict[str, int], writes: tuple = ()) -> DynamicKernel:
    """``graph``'s one dynamic kernel (symbolic.py), traced at the hint ``sizes``."""
    return compile_symbolic(graph, sizes, device, inductor_compile, writes)


def compile_kernel(graph: Graph, device: str, shapes: tuple, writes: tuple = (), for_a_program: bool = False) -> Kernel:
    """``graph`` compiled for the static input ``shapes``; ``writes`` (output, input) pairs computed into the input."""
    fx = to_fx(graph, shapes, device)
    write_into_inputs(fx.module, dict(writes))
    run = inductor_compile(fx.module, examples_for(fx.module, [*fx.examples, *fx.constants]), for_a_program)
    return Kernel(run, fx.constants)
