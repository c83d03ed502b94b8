"""Every example in docs/plugins.md runs: its Python blocks (doctests where they show a
session, else executed as a module would be), and its command lines parse with parity's own
argument parser or name only options the pytest plugin adds."""

import doctest
import pathlib
import re
import shlex

import pytest

from parity.cli import build_parser

ROOT = pathlib.Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "plugins.md"
PYTEST_PLUGIN = ROOT / "conformance" / "pytest_plugin.py"


def _blocks(language: str) -> list[str]:
    """The fenced blocks of the doc whose fence names ``language`` ("" for none), in order."""
    blocks, current, lang = [], None, ""
    for line in DOC.read_text(encoding="utf-8").splitlines(keepends=True):
        if line.startswith("```") and current is None:
            current, lang = [], line[3:].strip()
        elif line.startswith("```"):
            if lang == language:
                blocks.append("".join(current))
            current = None
        elif current is not None:
            current.append(line)
    return blocks


def _commands(program: str) -> list[list[str]]:
    lines = []
    for block in _blocks(""):
        text = block.replace("\\\n", " ")
        for line in text.splitlines():
            if not re.match(rf"^(\w+=\S+ +)*{program} ", line):  # not a command line (a file tree, a comment)
                continue
            words = shlex.split(line.split(" #")[0], posix=True)
            while words and "=" in words[0] and not words[0].startswith("-"):  # PYTHONPATH=src parity ...
                words = words[1:]
            if words and words[0] == program and "..." not in words:
                lines.append(words[1:])
    return lines


@pytest.mark.parametrize("index", range(len(_blocks("python"))))
def test_each_python_example_runs(index):
    source = _blocks("python")[index]
    if source.lstrip().startswith(">>>"):
        test = doctest.DocTestParser().get_doctest(source, {}, f"plugins.md python block {index}", str(DOC), 0)
        runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
        runner.run(test)
        assert runner.summarize(verbose=False).failed == 0
    else:
        exec(compile(source, f"plugins.md python block {index}", "exec"), {"__name__": f"plugins_md_{index}"})


def test_there_are_python_examples_and_command_lines():
    assert len(_blocks("python")) >= 4 and len(_commands("parity")) >= 5 and len(_commands("pytest")) >= 5


@pytest.mark.parametrize("words", _commands("parity"), ids=" ".join)
def test_each_parity_command_line_parses(words):
    build_parser().parse_args(words)  # argparse exits (SystemExit) on an unknown option or a bad value


@pytest.mark.parametrize("words", _commands("pytest"), ids=" ".join)
def test_each_pytest_command_line_names_options_the_plugin_adds(words):
    source = PYTEST_PLUGIN.read_text(encoding="utf-8")
    for flag in (w.partition("=")[0] for w in words if w.startswith("--")):
        assert f'"{flag}"' in source, f"docs/plugins.md: pytest {' '.join(words)}: the plugin adds no {flag}"
