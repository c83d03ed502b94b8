"""Every C++ kernel of one Inductor graph built as one library: one g++ run, not one per kernel.

Inductor (torch 2.13, Python wrapper code, CPU) builds each C++ kernel of a graph as its own
Python extension, one g++ run each. Every run first loads Inductor's precompiled header (a
155 MB ``.gch``): 0.48 s of CPU for an empty kernel on the 2-core development machine, against
0.78 s for a 30 KB one. A graph of 10 kernels paid that load 10 times.

While parity's compile runs (:func:`one_library_per_graph`, on the compile's own thread), the
wrapper module's calls to ``async_compile.cpp_pybinding`` are answered from one library built
for the whole module. At the module's first such call, its file (Inductor just wrote it to its
private cache directory) is parsed with :mod:`ast`, never run, and every kernel source in its
``cpp_pybinding`` calls is put into one C++ file:

- each kernel in its own namespace, its entry ``extern "C" void kernel(...)`` made an ordinary
  C++ function there (C linkage would clash: every kernel's entry is named ``kernel``);
- its ``#include`` lines moved to the top, once each;
- one Python binding per kernel (``kernel_0``, ``kernel_1``, ...), each reading its arguments as
  Inductor's own binding does: tensors by their data pointer, integers and floats by value.

The kernels' code is Inductor's, byte for byte, under the same compiler flags (the library is
built by Inductor's ``CppPythonBindingsCodeCache``: its flags, its precompiled header, its disk
cache keyed by the source). A kernel this cannot take (a source with a macro of its own, or
with another ``extern "C"``) is built alone, as Inductor builds it. If the library fails to build,
every kernel of the module is. Outside parity's compile, Inductor is untouched.

Example (what the combined source looks like; compiling it needs g++)::

    >>> source = combined_source([(("const float*", "float*"), KERNEL), (("float*",), KERNEL)])
    >>> [line for line in source.splitlines() if line.startswith("namespace")]
    ['namespace parity_kernel_0 {', 'namespace parity_kernel_1 {']
    >>> "kernel_1_py" in source
    True
"""

from __future__ import annotations

import ast
import contextlib
import logging
import re
import sys
import threading
from collections.abc import Iterator, Sequence

log = logging.getLogger(__name__)

# The entry Inductor's C++ codegen writes for a kernel of the Python wrapper (codegen/cpp.py:
# 'extern "C" {export} void {inline} kernel(...)'; the export declaration is empty off Windows).
_ENTRY = re.compile(r'extern\s+"C"\s+void\s+((?:C10_ALWAYS_INLINE_ATTRIBUTE\s+)?)kernel\s*\(')
# A kernel whose source defines a macro could change the code of the kernels after it in one file.
_MACRO = re.compile(r"^\s*#\s*(define|undef)\b", re.MULTILINE)
_INCLUDE = re.compile(r"^\s*#\s*include\b.*$", re.MULTILINE)

# A tiny kernel for the docstring's example.
KERNEL = '#include <torch/csrc/inductor/cpp_prefix.h>\nextern "C"  void  kernel(float* out_ptr0)\n{ out_ptr0[0] = 1.0f; }\n'

_state = threading.local()  # .active: inside parity's compile; .file, .kernels: the module being loaded
_installed = False
_install_lock = threading.Lock()
# Counted for tests and studies: libraries built (or loaded from Inductor's disk cache), the kernels
# they hold, kernels left to Inductor's own build, and libraries that failed to build.
counts = {"libraries": 0, "kernels": 0, "alone": 0, "failed": 0}


@contextlib.contextmanager
def one_library_per_graph() -> Iterator[None]:
    """Within this block, on this thread, Inductor builds each wrapper module's C++ kernels as one
    library. Wrap Inductor's ``compile_fx`` call in it."""
    _install()
    previous = getattr(_state, "active", False)
    _state.active = True
    try:
        yield
    finally:
        _state.active = previous
        _state.file, _state.kernels = None, {}


def combinable(source: str) -> bool:
    """Whether a kernel's source can share a file with others (one entry, no macro of its own)."""
    return source.count('extern "C"') == 1 and _ENTRY.search(source) is not None and not _MACRO.search(source)


def combined_source(kernels: Sequence[tuple[tuple[str, ...], str]]) -> str:
    """One C++ source with every ``(argtypes, kernel source)`` of ``kernels`` and a Python binding
    ``kernel_{i}`` for each, in order. Every source must be :func:`combinable`."""
    includes: dict[str, None] = {}
    bodies = []
    for i, (_, source) in enumerate(kernels):
        for line in _INCLUDE.findall(source):
            includes.setdefault(line.strip(), None)
        body = _INCLUDE.sub("", source)
        body = _ENTRY.sub(lambda m: f"void {m.group(1)}kernel(", body, count=1)
        bodies.append(f"namespace parity_kernel_{i} {{\n{body}\n}}  // namespace parity_kernel_{i}\n")
    bindings = [_binding(i, argtypes) for i, (argtypes, _) in enumerate(kernels)]
    methods = "".join(f'    {{"kernel_{i}", kernel_{i}_py, METH_VARARGS, ""}},\n' for i in range(len(kernels)))
    return "\n".join(includes) + "\n\n" + "".join(bodies) + _PYTHON_MODULE.format(
        bindings="".join(bindings), methods=methods)


def _binding(i: int, argtypes: Sequence[str]) -> str:
    args = ", ".join(f"parity_arg<{t.replace('const ', '')}>(args, {n})" for n, t in enumerate(argtypes))
    return (f"static PyObject* kernel_{i}_py(PyObject* self, PyObject* args) {{\n"
            f"    try {{\n"
            f"        if (!PyTuple_CheckExact(args) || PyTuple_GET_SIZE(args) != {len(argtypes)}) [[unlikely]]\n"
            f'            throw std::runtime_error("kernel_{i} takes a tuple of {len(argtypes)} arguments");\n'
            f"        parity_kernel_{i}::kernel({args});\n"
            f"        Py_RETURN_NONE;\n"
            f"    }} catch (std::exception const& e) {{\n"
            f"        PyErr_SetString(PyExc_RuntimeError, e.what());\n"
            f"        return nullptr;\n"
            f"    }}\n"
            f"}}\n")


# The module's Python side: arguments read as Inductor's binding reads them (a tensor through the
# data-pointer function whose address Inductor puts in _TORCHINDUCTOR_PYOBJECT_TENSOR_DATA_PTR
# before it loads a kernel library; an int64, a pointer-sized int and a float by value).
_PYTHON_MODULE = """
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <cerrno>
#include <cstdlib>
#include <stdexcept>

static void* (*parity_tensor_data_ptr)(PyObject* obj);

template <typename T> static inline T parity_arg(PyObject* args, size_t n) {{
    static_assert(std::is_pointer_v<T>, "a kernel argument is a pointer, an int64, a uintptr or a float");
    return static_cast<T>(parity_tensor_data_ptr(PyTuple_GET_ITEM(args, n)));
}}
template <> inline int64_t parity_arg<int64_t>(PyObject* args, size_t n) {{
    auto value = PyLong_AsSsize_t(PyTuple_GET_ITEM(args, n));
    if (value == -1 && PyErr_Occurred()) throw std::runtime_error("expected an int argument");
    return value;
}}
template <> inline uintptr_t parity_arg<uintptr_t>(PyObject* args, size_t n) {{
    auto value = PyLong_AsVoidPtr(PyTuple_GET_ITEM(args, n));
    if (value == reinterpret_cast<void*>(-1) && PyErr_Occurred()) throw std::runtime_error("expected an int argument");
    return reinterpret_cast<uintptr_t>(value);
}}
template <> inline float parity_arg<float>(PyObject* args, size_t n) {{
    auto value = PyFloat_AsDouble(PyTuple_GET_ITEM(args, n));
    if (value == -1.0 && PyErr_Occurred()) throw std::runtime_error("expected a float argument");
    return static_cast<float>(value);
}}

{bindings}
static PyMethodDef parity_methods[] = {{
{methods}    {{NULL, NULL, 0, NULL}}}};

static struct PyModuleDef parity_module = {{PyModuleDef_HEAD_INIT, "kernel", NULL, -1, parity_methods}};

PyMODINIT_FUNC PyInit_kernel(void) {{
    const char* text = std::getenv("_TORCHINDUCTOR_PYOBJECT_TENSOR_DATA_PTR");
    char* end = nullptr;
    errno = 0;
    uintptr_t address = text ? std::strtoull(text, &end, 10) : 0;
    if (!text || errno != 0 || end == text || address == 0) {{
        PyErr_SetString(PyExc_RuntimeError, "_TORCHINDUCTOR_PYOBJECT_TENSOR_DATA_PTR is not a valid address");
        return nullptr;
    }}
    parity_tensor_data_ptr = reinterpret_cast<decltype(parity_tensor_data_ptr)>(address);
    return PyModule_Create(&parity_module);
}}
"""


def _install() -> None:
    """Wrap ``AsyncCompile.cpp_pybinding`` (once per process): inside :func:`one_library_per_graph`
    a kernel comes from its module's one library; anywhere else, and for a kernel the library does
    not hold, Inductor's own method builds it."""
    global _installed
    with _install_lock:
        if _installed:
            return
        from torch._inductor.async_compile import AsyncCompile

        original = AsyncCompile.cpp_pybinding

        def cpp_pybinding(self, argtypes, source_code):
            if getattr(_state, "active", False):
                # the caller is the wrapper module's body, executing from its file
                try:
                    found = _kernel_from_library(sys._getframe(1).f_code.co_filename, argtypes, source_code)
                except Exception as exc:  # noqa: BLE001 - this is an optimisation: never fail a compile
                    counts["failed"] += 1
                    log.warning("parity: building Inductor's kernels as one library failed (%s: %s); Inductor "
                                "builds them", type(exc).__name__, exc)
                    _state.file, _state.kernels = sys._getframe(1).f_code.co_filename, {}
                    found = None
                if found is not None:
                    return found
                counts["alone"] += 1
            return original(self, argtypes, source_code)

        AsyncCompile.cpp_pybinding = cpp_pybinding
        _installed = True


def _kernel_from_library(path: str, argtypes, source_code: str):
    """The library function for one kernel of the module at ``path``, or None (Inductor builds it)."""
    from torch._inductor import config

    threads = getattr(sys.modules["torch._inductor.async_compile"], "get_compile_threads", lambda: config.compile_threads)()
    if (threads or 1) > 1:
        return None  # Inductor's pool builds kernels in parallel: leave it to that
    if getattr(_state, "file", None) != path:
        _state.file, _state.kernels = path, _build(path)
    return _state.kernels.get((tuple(argtypes), source_code))


def _build(path: str) -> dict:
    """Every combinable kernel of the module at ``path``, built as one library: (argtypes, source)
    → its function. Empty when fewer than two kernels combine or the build fails."""
    try:
        with open(path) as f:
            tree = ast.parse(f.read(), path)
    except (OSError, SyntaxError, ValueError):
        return {}
    kernels: dict[tuple, None] = {}
    for node in ast.walk(tree):
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                and node.func.attr == "cpp_pybinding" and len(node.args) == 2 and not node.keywords):
            try:
                argtypes, source = ast.literal_eval(node.args[0]), ast.literal_eval(node.args[1])
            except ValueError:
                continue
            if isinstance(source, str) and combinable(source):
                kernels.setdefault((tuple(argtypes), source), None)
    pairs = list(kernels)
    if len(pairs) < 2:
        return {}
    from torch._inductor.codecache import CppPythonBindingsCodeCache

    try:
        library = CppPythonBindingsCodeCache.load_async(combined_source(pairs), "cpu")()
    except Exception as exc:  # noqa: BLE001 - any failure: Inductor builds each kernel itself
        counts["failed"] += 1
        log.warning("parity: %d Inductor kernels of %s did not build as one library (%s); each is built "
                    "on its own", len(pairs), path, str(exc).splitlines()[0] if str(exc) else type(exc).__name__)
        return {}
    counts["libraries"] += 1
    counts["kernels"] += len(pairs)
    return {pair: getattr(library, f"kernel_{i}") for i, pair in enumerate(pairs)}
