"""The three kernel shapes parity generates, and how each turns into Triton source.

* **pointwise**: a 1-D block over the flat elements of one output shape. Every output of
  the kernel has that shape; whole elementwise chains, with the shape ops folded into
  their index arithmetic, become one kernel.
* **row**: a 2-D block ``[XBLOCK rows, RBLOCK columns]`` for one reduction signature
  (operand shape, reduced axes). Rows are the kept elements, columns the reduced ones,
  and a whole row sits in one block (a persistent reduction), so reductions with that
  signature are computed in place together with their elementwise producers and with
  consumers of the operand's or of the result's shape: a row softmax or layer_norm is
  one kernel.
* **dot**: a tiled ``tl.dot`` over ``[BM, BN]`` output tiles of one dot_general (batch
  dims on the grid's third axis), with its operand prologue (transposes, converts,
  broadcasts: index arithmetic in the tile loads) and its elementwise epilogue (bias,
  activation) fused.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from ...ir.dims import DimExpr
from ...ir.dtypes import DType
from ...ir.graph import Node, Value
from . import elementwise as ew
from .index import Index, delinearize, dim_text, size_names
from .writer import Domain, KernelWriter


def next_pow2(n: int) -> int:
    return 1 << max(0, (n - 1).bit_length())


def reduction_signature(node: Node) -> tuple:
    """(operand shape, reduced axes): reductions that share it share a row kernel."""
    x = node.inputs[0]
    axes = (node.attrs["axis"],) if "axis" in node.attrs else tuple(sorted(node.attrs["axes"]))
    return (tuple(x.type.shape), axes)


class Pointwise(Domain):
    kind = "pointwise"

    def __init__(self, shape: Sequence[int], block: int):
        self.shape = tuple(shape)
        self.numel = math.prod(self.shape)
        # a symbolic element count (a kernel argument) takes the largest block, masked
        self.block = block if isinstance(self.numel, DimExpr) else min(next_pow2(max(self.numel, 1)), block)

    def grid(self) -> tuple[int, ...]:
        return (-(-self.numel // self.block),)

    def mask(self, dep):
        return "xmask"

    def block_shape(self, deps):
        return f"[{self.block}]" if deps else "[]"

    def start(self, w: KernelWriter) -> None:
        w.line("pid = tl.program_id(0)")
        w.axis("xoff", f"pid * {self.block} + tl.arange(0, {self.block})", "x", self.numel, "xmask")
        self.index = Index(delinearize(w, "xoff", self.shape, "x"), "xoff")

    def root_index(self, v: Value) -> Index:
        return self.index


class Row(Domain):
    kind = "row"

    def __init__(self, signature, elements: int):
        shape, axes = signature
        self.signature = signature
        self.shape, self.axes = shape, axes
        self.kept = tuple(n for i, n in enumerate(shape) if i not in axes)
        self.reduced = tuple(shape[a] for a in axes)
        self.rows, self.cols = math.prod(self.kept), math.prod(self.reduced)
        self.constexprs: dict[str, str] = {}  # block sizes the host picks per call
        if isinstance(self.cols, DimExpr):
            # a symbolic row length: the blocks are constexpr arguments the host computes
            # from the sizes (one source; on CUDA one compilation per power-of-two RBLOCK)
            self.rblock, self.xblock = "RBLOCK", "XBLOCK"
            self.constexprs = {"RBLOCK": f"triton.next_power_of_2(max(1, {dim_text(self.cols)}))",
                               "XBLOCK": f"max(1, {elements} // RBLOCK)"}
            return
        self.rblock = next_pow2(max(self.cols, 1))
        fill = elements // self.rblock
        self.xblock = max(1, fill if isinstance(self.rows, DimExpr) else min(next_pow2(max(self.rows, 1)), fill))

    def grid(self):
        if self.constexprs:  # host expression
            return (f"triton.cdiv({dim_text(self.rows)}, XBLOCK)",)
        return (-(-self.rows // self.xblock),)

    def mask(self, dep):
        return {"x": "xmask", "r": "rmask"}[dep]

    def block_shape(self, deps):
        x = self.xblock if "x" in deps else 1
        r = self.rblock if "r" in deps else 1
        return f"[{x}, {r}]" if deps else "[]"

    def start(self, w):
        w.line("pid = tl.program_id(0)")
        w.axis("xoff", f"pid * {self.xblock} + tl.arange(0, {self.xblock})[:, None]", "x", self.rows, "xmask")
        w.axis("roff", f"tl.arange(0, {self.rblock})[None, :]", "r", self.cols, "rmask")
        row_dims = delinearize(w, "xoff", self.kept, "x")
        col_dims = delinearize(w, "roff", self.reduced, "r")
        full, rows, cols = [], iter(row_dims), iter(col_dims)
        for i in range(len(self.shape)):
            full.append(next(cols) if i in self.axes else next(rows))
        trailing = self.axes == tuple(range(len(self.shape) - len(self.axes), len(self.shape)))
        flat = w.let(f"xoff * {dim_text(self.cols)} + roff", "f") if trailing and self.cols else None
        self.row_index = Index(row_dims, "xoff")
        self.full_index = Index(tuple(full), flat)

    def root_index(self, v):
        return self.full_index if tuple(v.type.shape) == self.shape else self.row_index

    def in_place(self, w, node, idx):
        if node.op not in REDUCTIONS or reduction_signature(node) != self.signature:
            return None
        if idx.dims != self.row_index.dims or idx.valid is not None:
            return None
        return _reduce(w, self, node)


# The row kernel's table: reduction op -> its identity for an operand dtype (the value of an
# empty reduction, and the fill of masked lanes). _reduce folds each of them.
REDUCTIONS = {
    "reduce_sum": lambda dt: 0, "reduce_prod": lambda dt: 1,
    "reduce_max": lambda dt: float("-inf") if dt.is_float else dt.iinfo.min,
    "reduce_min": lambda dt: float("inf") if dt.is_float else dt.iinfo.max,
    "argmax": lambda dt: float("-inf") if dt.is_float else dt.iinfo.min,
    "argmin": lambda dt: float("inf") if dt.is_float else dt.iinfo.max,
    "reduce_and": lambda dt: True, "reduce_or": lambda dt: False,
}


def _reduce(w: KernelWriter, row: Row, node: Node) -> str:
    x = node.inputs[0]
    dt, out = x.dtype, node.outputs[0].dtype
    rows = frozenset("x")
    ident = w.const(REDUCTIONS[node.op](dt), dt)
    if row.cols == 0:  # an empty reduction is its identity (argmax/argmin reject empty axes)
        return ident
    xv = w.value(x, row.full_index)
    t = w.let(f"tl.where(xmask & rmask, {xv}, {ident})", "t", deps=frozenset("xr"))
    op = node.op
    if op in ("argmax", "argmin"):
        ii = w.let(f"tl.where(xmask & rmask, tl.broadcast_to(roff, ({row.xblock}, {row.rblock})), {row.rblock})",
                   "t", deps=frozenset("xr"))
        res = w.fresh("red")
        w.line(f"_, {res} = tl.reduce(({t}, {ii}), 1, M.{op}_combine, keep_dims=True)")
        w.deps[res] = rows
        return w.let(f"{res}.to({ew.TL_DTYPE[out]})", "red", deps=rows)
    if op == "reduce_sum":
        expr = f"tl.sum({t}, axis=1, keep_dims=True)"
    elif op == "reduce_prod" and dt.is_float and dt is not DType.float64:
        # float64 partial products: float32 ones overflow or flush where the product itself is in range
        wide = w.let(f"{t}.to(tl.float64)", "t", deps=frozenset("xr"))
        prod = f"tl.reduce({wide}, 1, M.mul, keep_dims=True)"
        expr = f"({prod}).to(tl.float32)" if dt is DType.float32 else f"M.f64_to_f32_odd({prod})"
    elif op == "reduce_prod":
        expr = f"tl.reduce({t}, 1, M.mul, keep_dims=True)"
    elif op in ("reduce_max", "reduce_min"):
        fn = op[len("reduce_"):]
        expr = (f"tl.reduce({t}, 1, M.{fn}_nan, keep_dims=True)" if dt.is_float
                else f"tl.{fn}({t}, axis=1, keep_dims=True)")
    else:  # reduce_and / reduce_or on bool
        fn = "min" if op == "reduce_and" else "max"
        expr = f"(tl.{fn}({t}.to(tl.int32), axis=1, keep_dims=True) != 0)"
    if not dt.is_float and not dt.is_bool:
        expr = f"({expr}).to({ew.TL_DTYPE[dt]})"  # tl.sum widens small ints; wrap back
    return w.let(ew.round_to(expr, dt), "red", deps=rows)


class Dot(Domain):
    kind = "dot"

    def __init__(self, node: Node, tile: int, cuda: bool):
        self.node = node
        self.cuda = cuda
        lhs, rhs = node.inputs
        a = node.attrs
        self.lb, self.rb = a["lhs_batch_dims"], a["rhs_batch_dims"]
        self.lc, self.rc = a["lhs_contracting_dims"], a["rhs_contracting_dims"]
        ls, rs = lhs.type.shape, rhs.type.shape
        self.lf = tuple(i for i in range(len(ls)) if i not in self.lb and i not in self.lc)
        self.rf = tuple(i for i in range(len(rs)) if i not in self.rb and i not in self.rc)
        self.batch = tuple(ls[i] for i in self.lb)
        self.mshape = tuple(ls[i] for i in self.lf)
        self.nshape = tuple(rs[i] for i in self.rf)
        self.kshape = tuple(ls[i] for i in self.lc)
        self.B, self.M, self.N, self.K = (math.prod(s) for s in (self.batch, self.mshape, self.nshape, self.kshape))
        # a symbolic extent (a kernel argument) takes the full tile, masked
        self.bm, self.bn, self.bk = (tile if isinstance(n, DimExpr) else min(max(next_pow2(max(n, 1)), 16), tile)
                                     for n in (self.M, self.N, self.K))

    def grid(self):
        return (-(-self.M // self.bm), -(-self.N // self.bn), self.B)

    def mask(self, dep):
        return {"m": "mmask", "n": "nmask", "a": "kamask", "b": "kbmask"}[dep]

    def block_shape(self, deps):
        if not deps:
            return "[]"
        rows = self.bm if "m" in deps else self.bk if "b" in deps else 1
        cols = self.bn if "n" in deps else self.bk if "a" in deps else 1
        return f"[{rows}, {cols}]"

    def start(self, w):
        node = self.node
        lhs, rhs = node.inputs
        out = node.outputs[0]
        w.line("pid_m = tl.program_id(0)")
        w.line("pid_n = tl.program_id(1)")
        w.line("pid_b = tl.program_id(2)")
        w.axis("om", f"pid_m * {self.bm} + tl.arange(0, {self.bm})[:, None]", "m", self.M, "mmask")
        w.axis("on", f"pid_n * {self.bn} + tl.arange(0, {self.bn})[None, :]", "n", self.N, "nmask")
        w.declare("pid_b", "")
        bdims = delinearize(w, "pid_b", self.batch, "b")
        mdims = delinearize(w, "om", self.mshape, "m")
        ndims = delinearize(w, "on", self.nshape, "n")
        acc_dt = out.dtype if not out.dtype.is_float else (DType.float64 if out.dtype is DType.float64
                                                           else DType.float32)
        acc = w.fresh("acc")
        w.line(f"{acc} = tl.zeros(({self.bm}, {self.bn}), {ew.reg(acc_dt)})")
        w.deps[acc] = frozenset("mn")
        if self.K:
            w.line(f"for k0 in range(0, {dim_text(self.K)}, {self.bk}):")
            with w.scope():
                w.axis("ka", f"k0 + tl.arange(0, {self.bk})[None, :]", "a", self.K, "kamask")
                w.axis("kb", f"k0 + tl.arange(0, {self.bk})[:, None]", "b", self.K, "kbmask")
                ka = delinearize(w, "ka", self.kshape, "ka")
                kb = delinearize(w, "kb", self.kshape, "kb")
                a = w.value(lhs, Index(_place(len(lhs.type.shape), (self.lb, bdims), (self.lf, mdims), (self.lc, ka))))
                b = w.value(rhs, Index(_place(len(rhs.type.shape), (self.rb, bdims), (self.rf, ndims), (self.rc, kb))))
                # zero the padding lanes: an inlined prologue may turn the loads' 0 into inf/NaN
                a = w.let(f"tl.where(mmask & kamask, {a}, 0)", "a", deps=frozenset("ma"))
                b = w.let(f"tl.where(kbmask & nmask, {b}, 0)", "b", deps=frozenset("bn"))
                w.line(f"{acc} += {self._product(out.dtype, a, b)}")
        result = w.let(ew.round_to(acc, out.dtype), "acc", deps=frozenset("mn"))
        flat = w.let(f"pid_b * {dim_text(self.M * self.N)} + om * {dim_text(self.N)} + on", "f")  # row-major (b, m, n)
        self.out_index = Index(bdims + mdims + ndims, flat)
        w.seed(out, self.out_index, result)

    def _product(self, dtype: DType, a: str, b: str) -> str:
        if dtype is DType.float32 or (dtype.is_float and dtype is not DType.float64 and not self.cuda):
            return f"tl.dot({a}, {b}, input_precision='ieee')"
        if dtype in (DType.float16, DType.bfloat16):  # exact in the narrow type; f32 accumulation
            t = ew.TL_DTYPE[dtype]
            return f"tl.dot({a}.to({t}), {b}.to({t}), out_dtype=tl.float32)"
        # float64 and integers: tensor cores do not apply; products wrap like the IR's ints
        return f"tl.sum({a}[:, :, None] * {b}[None, :, :], axis=1)"

    def root_index(self, v):
        return self.out_index


def _place(rank: int, *groups) -> tuple[str, ...]:
    dims = [""] * rank
    for axes, exprs in groups:
        for axis, expr in zip(axes, exprs):
            dims[axis] = expr
    return tuple(dims)


def kernel_source(name: str, w: KernelWriter, outputs: Sequence[str]) -> str:
    """The ``@triton.jit`` function text: pointer parameters, size parameters (symbolic
    dims, see index.dim_text), constexpr block sizes the host picks, constants, then the body."""
    sizes = kernel_sizes(w)
    blocks = [f"{b}: tl.constexpr" for b in getattr(w.domain, "constexprs", {})]
    params = list(w.params.values()) + list(outputs) + sizes + blocks
    # Triton specializes int arguments on their value (1, multiples of 16) by default: a
    # new size would compile again, so size arguments opt out.
    jit = f"@triton.jit(do_not_specialize={sizes!r})" if sizes else "@triton.jit"
    head = [jit, f"def {name}({', '.join(params)}):"]
    return "\n".join(head + w.prologue + w.lines) + "\n"


def kernel_sizes(w: KernelWriter) -> list[str]:
    """The size arguments (``size_B``...) a kernel body reads, sorted."""
    return size_names("\n".join(w.prologue + w.lines))
