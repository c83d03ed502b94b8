"""Every docstring example in the package runs (doctest), by import name."""

import doctest
import importlib
import pkgutil

import pytest

import parity


def _modules():
    names = ["parity"]
    for info in pkgutil.walk_packages(parity.__path__, "parity."):
        names.append(info.name)
    for sub in ("ir", "backends", "frontend", "conformance", "debugger"):
        package = importlib.import_module(f"parity.{sub}")
        names.append(package.__name__)
        names += [i.name for i in pkgutil.walk_packages(package.__path__, f"parity.{sub}.")]
    return sorted(set(names))


# Modules that need optional heavy runtimes are still imported: every dependency is declared.
@pytest.mark.parametrize("name", _modules())
def test_docstring_examples_run(name):
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.failed == 0, f"{result.failed} docstring example(s) failed in {name}"
