"""The front door as a new user meets it: the CLI's usage errors, argument checks of the
public API, and parity.export's errors and keyword inputs (issue 27, items 3, 7, 8, 9).

Each CLI case runs ``parity.cli.main`` as the ``parity`` command does and asserts the exit
status, the exact message and its line count; one runs the real entry point in a
subprocess to show that no traceback leaks. docs/troubleshooting-cli.md is built from
these cases.
"""

from __future__ import annotations

import importlib.util
import logging
import subprocess
import sys
import textwrap

import pytest
import torch

import parity
from parity import validate
from parity.cli import main
from parity.frontend.export import ExportError, ExportWarning, UnexportableOp

# the built-ins, then the plugins scripts/test.sh installs (the OpenVINO one where it is installed)
BACKENDS = ", ".join(["reference", "xla", "triton", "onnx", "inductor", "numpy"]
                     + ["openvino"] * bool(importlib.util.find_spec("parity_openvino_backend")))
PLUGIN_HINT = "(a plugin registers an entry point in the group 'parity.backends')"


@pytest.fixture
def script(tmp_path):
    """A script ``parity diff`` can load: model.py defining fn and its example inputs."""
    path = tmp_path / "model.py"
    path.write_text(textwrap.dedent("""
        import torch

        def fn(x):
            return torch.tanh(x) * 2

        fn.example_args = (torch.randn(4),)
    """))
    return path


def run_cli(capsys, *argv) -> tuple[int, list[str], str]:
    """(exit status, stderr's lines, stdout) of ``parity *argv``."""
    try:
        status = main(list(argv))
    except SystemExit as exit_:  # argparse's own usage errors
        status = exit_.code
    captured = capsys.readouterr()
    return status, captured.err.splitlines(), captured.out


def cli_cases(script_path):
    """(argv, the one line on stderr) of each usage error a user makes on the command line."""
    model = str(script_path)
    typo = str(script_path.with_name("modle.py"))
    return [
        (["ops", "--backend", "onx"],
         f"parity ops: unknown backend 'onx'; did you mean 'onnx'? choose from: {BACKENDS} {PLUGIN_HINT}"),
        (["conform", "--ops", "["],
         "parity conform: --ops '[' is not a regular expression: unterminated character set at position 0 "
         "(escape literal characters: '\\[')"),
        (["conform", "--dtype", "f33"], "parity conform: unknown dtype 'f33'; did you mean 'f32'? choose from: "
                                        "bool, i8, i16, i32, i64, u8, u32, f16, bf16, f32, f64, c64, c128"),
        (["conform", "--device", "cdua", "--ops", "^abs$"],
         "parity conform: the backends run on cpu, cuda, tpu, not 'cdua'; did you mean 'cuda'? "
         "choose one of those devices"),
        (["fuzz", "--device", "cdua", "--budget", "1", "--backend", "onnx"],
         "parity fuzz: backend 'onnx' runs on cpu, cuda, not 'cdua'; did you mean 'cuda'? "
         "choose one of those devices or another backend"),
        (["fuzz", "--budget", "-3"], "parity fuzz: --budget is a number of graphs, at least 1; got -3"),
        (["fuzz", "--time-limit", "0"], "parity fuzz: --time-limit is a number of seconds above 0; got 0"),
        (["fuzz", "--graph", "-1"], "parity fuzz: --graph is a graph's index in the seed's stream, from 0; got -1"),
        (["diff", f"{typo}:fn"], f"parity diff: no such script: {typo!r}; did you mean 'model.py'?"),
        (["diff", f"{model}:fn", "--backend", "onx"],
         f"parity diff: unknown backend 'onx'; did you mean 'onnx'? choose from: {BACKENDS} {PLUGIN_HINT}"),
        (["diff", f"{model}:fn", "--against", "eagr"],
         f"parity diff: unknown backend 'eagr'; did you mean 'eager'? choose from: oracle, eager, {BACKENDS} "
         f"{PLUGIN_HINT}"),
        (["diff", model], f"parity diff: expected SCRIPT.py:NAME, got {model!r} (e.g. model.py:net)"),
        (["bench", "--backends", "onx"],
         f"parity bench: unknown backend 'onx'; did you mean 'onnx'? choose from: auto, {BACKENDS} {PLUGIN_HINT}"),
        (["bench", "--workloads", "mpl"], "parity bench: unknown workload 'mpl'; did you mean 'mlp'? choose from: "
                                          "tiny, mlp, encoder, encoder_train, adamw_step, chain, sigmoid_chain, softmax_ln, convnet"),
    ]


def test_each_cli_usage_error_is_one_line_and_exit_status_2(capsys, script):
    for argv, message in cli_cases(script):
        status, err, out = run_cli(capsys, *argv)
        assert (status, err, out) == (2, [message], ""), argv


def test_argparse_errors_are_exit_status_2_with_the_usage_line(capsys):
    status, err, out = run_cli(capsys, "aten", "--bogus")
    assert status == 2 and len(err) == 2 and err[1] == "parity: error: unrecognized arguments: --bogus"


def test_the_command_leaks_no_traceback(script):
    """The installed entry point, as a user runs it: exit 2, one line, no Traceback."""
    argv = ["diff", f"{script}:fn", "--backend", "onx"]
    done = subprocess.run([sys.executable, "-c", "import sys, parity.cli; sys.exit(parity.cli.main())", *argv],
                          capture_output=True, text=True)
    assert done.returncode == 2
    assert done.stderr.splitlines() == [dict((tuple(a), m) for a, m in cli_cases(script))[tuple(argv)]], done.stderr
    assert "Traceback" not in done.stderr + done.stdout


def test_a_bug_in_parity_is_exit_status_3_with_its_traceback(capsys, monkeypatch):
    """Exit 1 stays a verdict (a node over its contract, a failed cell); a crash is not one."""
    from parity import cli

    def crash(args):
        raise RuntimeError("planted")

    monkeypatch.setattr(cli, "_run_aten", crash)
    status, err, out = run_cli(capsys, "aten")
    assert status == 3 and err[0] == "Traceback (most recent call last):" and err[-2] == "RuntimeError: planted"
    assert err[-1] == "parity aten: internal error (exit status 3): please report it with the traceback above"


def test_did_you_mean_only_for_near_misses():
    assert validate.did_you_mean("onx", ["onnx", "xla"]) == " did you mean 'onnx'?"
    assert validate.did_you_mean("tpu-v9", ["onnx", "xla"]) == ""


@pytest.mark.parametrize("options, message", [
    (dict(backend="onx"), f"unknown backend 'onx'; did you mean 'onnx'? choose from: auto, {BACKENDS} {PLUGIN_HINT}"),
    (dict(backend="onnx", device="cdua"),
     "backend 'onnx' runs on cpu, cuda, not 'cdua'; did you mean 'cuda'? choose one of those devices or another "
     "backend"),
    (dict(backend="reference", device="cuda"), "backend 'reference' runs on cpu, not 'cuda'; choose one of those devices or another "
                          "backend"),
    (dict(device="gpu"), "backend='auto' chooses among backends that run on cpu, cuda, tpu, not 'gpu'; did you mean "
                         "'cuda'? choose one of those devices"),
    (dict(backend="onnx", device="gpu"),
     "backend 'onnx' runs on cpu, cuda, not 'gpu'; did you mean 'cuda'? choose one of those devices or another backend"),
    (dict(strict="yes"), "strict should be bool, got str 'yes'"),
    (dict(fullgraph="yes"), "fullgraph should be bool, got str 'yes'"),
    (dict(dynamic="yes"), "dynamic should be bool or NoneType, got str 'yes'"),
    (dict(fast_path=1), "fast_path should be bool or NoneType, got int 1"),
    (dict(cache_dir=123), "cache_dir should be str or PathLike or bool or NoneType, got int 123"),
    (dict(format="onnx"), "parity.compile takes no option 'format': it is an option of parity.export"),
    (dict(stric=True), "parity.compile takes no option 'stric'; did you mean 'strict'? its options are backend, "
                       "device, strict, dynamic, mesh, in_shardings, out_shardings, cache_dir, auto, fast_path, "
                       "precision, fullgraph, backend_options"),
    (dict(auto=dict(candidates=("xla", "onx"))),
     f"unknown backend 'onx'; did you mean 'onnx'? choose from: {BACKENDS} {PLUGIN_HINT}"),
    (dict(auto=dict(candidates=("onnx", "reference")), device="tpu"),
     "backend='auto' chooses among backends that run on cpu, cuda, not 'tpu'; did you mean 'cpu'? choose one of those "
     "devices"),
    (dict(auto=dict(budget_s=0)), "AutoOptions.budget_s should be a positive number of seconds, got 0"),
    (dict(auto=dict(matrix="no-such-report.json")),
     "no such conformance report (AutoOptions.matrix): 'no-such-report.json'"),
])
def test_compile_rejects_bad_arguments_up_front(options, message):
    if "auto" in options:
        options = {"backend": "auto", "auto": parity.AutoOptions(**options.pop("auto")), **options}
    with pytest.raises(validate.UsageError) as caught:
        parity.compile(lambda x: x + 1, **options)
    assert str(caught.value) == message


def test_a_typo_in_parity_backend_is_named_with_the_variable(monkeypatch):
    monkeypatch.setenv("PARITY_BACKEND", "onx")
    with pytest.raises(validate.UsageError) as caught:
        parity.compile(lambda x: x + 1, backend="auto")
    assert str(caught.value) == f"$PARITY_BACKEND: unknown backend 'onx'; did you mean 'onnx'? choose from: " \
                                f"{BACKENDS} {PLUGIN_HINT}"


def test_the_public_functions_refuse_what_is_not_theirs_to_take():
    f = lambda x: x + 1  # noqa: E731
    x = torch.ones(2)
    with pytest.raises(validate.UsageError) as caught:
        parity.compile(42)
    assert str(caught.value) == "parity.compile compiles a function or an nn.Module, got int 42"
    with pytest.raises(validate.UsageError) as caught:  # its letters were looked up as backends: 'o'
        parity.explain(f, x, backends="onnx")
    assert str(caught.value) == "backends is a list of backend names, got the string 'onnx': pass backends=['onnx']"
    for function in (parity.fallbacks, parity.auto_choices):  # an AttributeError on 'session'
        with pytest.raises(validate.UsageError) as caught:
            function(f)
        assert str(caught.value) == (f"parity.{function.__name__} reads what parity.compile returned, got function "
                                     "'<lambda>': pass the compiled object")
    with pytest.raises(ExportError) as caught:  # a lone tensor was split into its rows: f() got 2 arguments
        parity.export(f, x)
    assert str(caught.value) == "args is the tuple of the call's positional arguments, got Tensor: pass (x,) for one"


def test_explain_rejects_an_unknown_backend():
    with pytest.raises(validate.UsageError, match=r"^unknown backend 'xl'; did you mean 'xla'\? choose from: "):
        parity.explain(lambda x: x + 1, torch.ones(2), backends=["onnx", "xl"])


# -- parity.export ------------------------------------------------------------------------------

def double(x):
    return torch.tanh(x) * 2


def bessel(x):
    return torch.special.bessel_j0(x) * 2  # no IR translation: the op export cannot hold


@pytest.fixture
def no_capture(monkeypatch):
    """Export's captures replaced by a failure: a check that runs first never reaches them."""
    import importlib

    from parity.frontend import capture

    export_module = importlib.import_module("parity.frontend.export")

    def fail(*args, **kwargs):
        raise AssertionError("captured before the arguments were checked")

    monkeypatch.setattr(export_module, "_trace", fail)
    monkeypatch.setattr(capture, "capture_program", fail)


@pytest.mark.parametrize("options, message", [
    (dict(path="{tmp}/missing/f.onnx"),
     "export path '{tmp}/missing/f.onnx': the folder '{tmp}/missing' does not exist (create it first)"),
    (dict(path="{tmp}"), "export path '{tmp}' is a folder; give a file name"),
    (dict(path="{tmp}/f.onnx", format="jax"),
     "export path '{tmp}/f.onnx' names a onnx file, but format='jax'; pass format='onnx', or a path ending in "
     "the jax format's extension"),
    (dict(path="{tmp}/f.onnx", format="tflite"),
     "unknown export format 'tflite'; choose from: onnx, stablehlo, jax"),
    (dict(path="{tmp}/f.onnx", backend="xla"), "parity.export takes no option 'backend': it is an option of "
                                               "parity.compile"),
    (dict(path="{tmp}/f.onnx", strict=False), "parity.export takes no option 'strict': it is an option of "
                                              "parity.compile"),
])
def test_export_checks_its_arguments_and_path_before_it_captures(options, message, tmp_path, no_capture):
    options = {k: v.format(tmp=tmp_path) if isinstance(v, str) else v for k, v in options.items()}
    with pytest.raises(ExportError) as caught:
        parity.export(double, (torch.ones(3),), **options)
    assert str(caught.value) == message.format(tmp=tmp_path)


def test_export_of_an_untranslatable_op_names_it_and_the_users_line_and_only_exports_fixes(tmp_path):
    with pytest.raises(UnexportableOp) as caught:
        parity.export(bessel, (torch.ones(3),), path=tmp_path / "g.onnx")
    line = bessel.__code__.co_firstlineno + 1
    assert str(caught.value).splitlines() == [
        f"aten.special_bessel_j0.default at {__file__}:{line} in bessel cannot be exported to onnx",
        "  why: parity has no translation for this op (see `parity aten`)",
        "  fix: the file holds the whole model in parity's IR, so rewrite that line with ops parity translates "
        "(`parity aten` lists them)"]
    assert caught.value.__cause__ is None and caught.value.__suppress_context__
    assert "backend" not in str(caught.value) and "strict" not in str(caught.value)
    assert not (tmp_path / "g.onnx").exists()


def branches_on_data(x):
    if x.sum() > 0:
        return x * 2
    return x


def test_export_of_a_branch_on_data_names_the_line_with_only_exports_fixes(tmp_path, capsys):
    with pytest.raises(ExportError) as caught:
        parity.export(branches_on_data, (torch.ones(3),), path=tmp_path / "b.onnx")
    line = branches_on_data.__code__.co_firstlineno + 1
    assert str(caught.value).splitlines() == [
        f"branches_on_data cannot be captured as one graph: it branches on a tensor's value at {__file__}:{line} "
        "in branches_on_data",
        "  code: if x.sum() > 0:",
        "  why: capture and export need one static graph, and torch.export cannot follow a Python branch on data "
        "(Dynamo: data-dependent branching)",
        "  fix: make that code branchless (torch.where, torch.cond)"]
    assert "class GraphModule" not in capsys.readouterr().err  # torch.export prints its partial graph


class Records(logging.Handler):
    def __init__(self):
        super().__init__()
        self.records: list[logging.LogRecord] = []

    def emit(self, record):
        self.records.append(record)


def test_hugging_face_model_exports_with_dynamic_keyword_inputs(tmp_path):
    """A BERT from a tiny config, called as users call it (keyword tensors), exported with
    dynamic batch and seq; the file runs in onnxruntime at two other sizes, equal to eager,
    and torch's guard logs stay off stderr."""
    import numpy as np
    import onnxruntime as ort
    import transformers

    config = transformers.BertConfig(vocab_size=100, hidden_size=32, num_hidden_layers=1, num_attention_heads=2,
                                     intermediate_size=64, max_position_embeddings=64)
    torch.manual_seed(0)
    model = transformers.BertModel(config).eval()
    inputs = {"input_ids": torch.randint(0, 100, (2, 8)), "attention_mask": torch.ones(2, 8, dtype=torch.long)}
    dims = {"batch_and_seq": {0: "batch", 1: "seq"}}
    guard_log, records = logging.getLogger("torch._guards"), Records()
    guard_log.addHandler(records)  # torch's own handler writes to the stderr of its import time
    try:
        with pytest.warns(ExportWarning, match="seq must be <= 64"):  # ONNX cannot check the position table
            parity.export(model, (), kwargs=inputs, path=tmp_path / "bert.onnx",
                          dynamic_dims={name: dims["batch_and_seq"] for name in inputs})
    finally:
        guard_log.removeHandler(records)
    assert records.records == []  # the retry within the position table's bound is parity's business
    session = ort.InferenceSession(str(tmp_path / "bert.onnx"), providers=["CPUExecutionProvider"])
    assert [i.name for i in session.get_inputs()] == ["input_ids", "attention_mask"]
    for batch, seq in [(3, 5), (1, 13)]:
        ids, mask = torch.randint(0, 100, (batch, seq)), torch.ones(batch, seq, dtype=torch.long)
        mask[0, -1] = 0
        with torch.no_grad():
            want = model(input_ids=ids, attention_mask=mask).last_hidden_state.numpy()
        (got, _) = session.run(None, {"input_ids": ids.numpy(), "attention_mask": mask.numpy()})
        assert got.shape == want.shape
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


# -- feedback on slow work -------------------------------------------------------------------------

def terminal():
    """A console that is a terminal (force_terminal) writing to a buffer, as a user's tty would show."""
    import io

    from rich.console import Console

    return Console(file=io.StringIO(), force_terminal=True, width=100)


def test_slow_work_shows_a_status_line_on_a_terminal_and_nothing_when_piped():
    import io

    from rich.console import Console

    from parity.frontend.status import slow_work

    tty, piped = terminal(), Console(file=io.StringIO(), width=100)
    for console in (tty, piped):
        with slow_work("parity: compiling the forward graph", console=console, delay_s=0):
            pass
    assert "parity: compiling the forward graph" in tty.file.getvalue()
    assert piped.file.getvalue() == ""


def test_first_compile_and_the_cli_imports_show_a_status_on_a_terminal(monkeypatch, capsys):
    from parity.frontend import status

    tty = terminal()
    monkeypatch.setattr(status, "make_console", lambda: tty)
    monkeypatch.setattr(status, "DELAY_S", 0)
    torch._dynamo.reset()
    parity.compile(double, backend="reference")(torch.ones(3))
    assert "parity: compiling the inference graph for backend 'reference'" in tty.file.getvalue()
    assert main(["aten", "--json"]) == 0
    assert "parity: loading torch" in tty.file.getvalue()
    assert "parity:" not in capsys.readouterr().err  # the real stderr is no terminal here: nothing on it


def test_compile_status_is_silent_when_stderr_is_piped(monkeypatch, capfd):
    from parity.frontend import status

    monkeypatch.setattr(status, "DELAY_S", 0)
    torch._dynamo.reset()
    parity.compile(double, backend="reference")(torch.ones(3))
    assert "compiling" not in capfd.readouterr().err


def test_piped_ops_table_keeps_full_column_names(capsys):
    assert main(["ops"]) == 0
    header = next(line for line in capsys.readouterr().out.splitlines() if line.startswith("┃"))
    assert [cell.strip() for cell in header.strip("┃ ").split("┃")] == ["op", "kind", "accuracy", *BACKENDS.split(", ")]


def test_the_option_lists_are_the_signatures():
    """validate.OPTIONS names each function's keywords (for "takes no option" and its suggestions):
    it must follow the signatures, or a new option is refused as unknown."""
    import inspect

    from parity import validate

    for name, function in (("parity.compile", parity.compile), ("parity.explain", parity.explain)):
        keywords = [p.name for p in inspect.signature(function).parameters.values()
                    if p.kind is inspect.Parameter.KEYWORD_ONLY]
        assert list(validate.OPTIONS[name]) == keywords, name


@pytest.mark.parametrize("make, message", [
    (lambda: parity.Mesh("data"), "a mesh is given as {axis name: size}, e.g. Mesh({'data': 8}), got 'data'"),
    (lambda: parity.Mesh([("data", 4), "model"]),
     "a mesh's axes are (name, size) pairs, e.g. Mesh([('data', 4), ('model', 2)]), got 'model'"),
    (lambda: parity.diff(lambda x: x * 2, torch.ones(2), backend="onx"), "unknown backend 'onx'; did you mean 'onnx'?"),
    (lambda: parity.diff(lambda x: x * 2, torch.ones(2), against="eagr"),
     "unknown backend 'eagr'; did you mean 'eager'?"),
    (lambda: parity.diff(lambda x: x * 2, torch.ones(2), backend="onnx", device="cdua"),
     "backend 'onnx' runs on cpu, cuda, not 'cdua'; did you mean 'cuda'?"),
])
def test_mesh_and_diff_refuse_bad_arguments_in_one_line(make, message):
    """Mesh("data") was a ValueError from tuple unpacking; diff checked its backend only after capturing."""
    with pytest.raises(parity.ir.ParityError) as caught:
        make()
    assert str(caught.value).startswith(message) and "\n" not in str(caught.value)


def test_python_dash_m_parity_bench_exits_2_on_a_bad_name():
    """``python -m parity.bench`` skips the CLI's up-front checks; its own check exits 2 too (was 1)."""
    done = subprocess.run([sys.executable, "-m", "parity.bench", "--workloads", "mpl", "--backends", "onnx"],
                          capture_output=True, text=True)
    assert done.returncode == 2 and done.stdout == ""
    (line,) = done.stderr.splitlines()
    assert line.startswith("parity bench: unknown name(s) ['mpl']; workloads: ['tiny', 'mlp'")


def test_explain_refuses_a_keyword_the_function_does_not_take_and_passes_those_it_does():
    def scaled(x, scale=2.0):
        return torch.relu(x) * scale

    with pytest.raises(validate.UsageError) as caught:
        parity.explain(scaled, torch.ones(3), backend="xla")
    assert str(caught.value) == ("parity.explain passes the keyword 'backend' to "
                                 "test_explain_refuses_a_keyword_the_function_does_not_take_and_passes_those_it_does."
                                 "<locals>.scaled, which takes no such parameter; did you mean 'backends'? "
                                 "parity.explain's own options are backends")
    with pytest.raises(validate.UsageError, match="to Linear.forward, which takes no such parameter"):
        parity.explain(torch.nn.Linear(3, 3), torch.ones(3), backend="onnx")
    report = parity.explain(scaled, torch.ones(3), scale=3.0, backends=["reference"])  # fn's own keyword
    assert report.graphs


def test_version_prints_parity_torch_and_each_backend_stack_and_exits_0(capsys):
    """``parity --version`` was exit 2 (a missing subcommand); the versions come from the installed metadata."""
    from importlib.metadata import version

    from parity.backends.registry import BUILTIN_BACKENDS

    status, err, out = run_cli(capsys, "--version")
    lines = out.splitlines()
    assert status == 0 and err == []
    assert lines[:2] == [f"parity {version('parity')}", f"torch {torch.__version__}"]
    assert parity.__version__ == version("parity")
    backend_lines = {line.split(":")[0].removeprefix("backend "): line for line in lines[2:]}
    assert set(BUILTIN_BACKENDS) <= set(backend_lines)
    assert backend_lines["onnx"] == f"backend onnx: onnx {version('onnx')}, onnxruntime {version('onnxruntime')}"
    assert backend_lines["xla"] == f"backend xla: jax {version('jax')}, jaxlib {version('jaxlib')}"
    done = subprocess.run([sys.executable, "-m", "parity.cli", "--version"], capture_output=True, text=True)
    assert (done.returncode, done.stdout.splitlines()) == (0, lines)
