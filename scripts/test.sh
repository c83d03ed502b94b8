#!/usr/bin/env bash
# The test command: sets up .venv if needed, lints with ruff, then runs the whole test suite on CPU.
source "$(dirname "${BASH_SOURCE[0]}")/venv.sh"
# The out-of-tree backend template is installed (once) so that CI certifies it through its entry point.
# (Found, not imported: importing it imports parity, 2 s.)
python -c "import importlib.util, sys; sys.exit(importlib.util.find_spec('parity_numpy_backend') is None)" ||
  python -m pip install -q --no-deps --no-build-isolation -e examples/plugin_template
# The OpenVINO plugin too, with openvino from the registry (torch and numpy stay as they are).
python -c "import importlib.util, sys; sys.exit(importlib.util.find_spec('parity_openvino_backend') is None)" ||
  python -m pip install -q --no-build-isolation -e examples/openvino_backend \
    -c <(python -m pip freeze | grep -E '^(torch|numpy)==')
export TRITON_INTERPRET=1
# Bytecode is written (to the __pycache__ folders git ignores) even where PYTHONDONTWRITEBYTECODE is
# set: without it every pytest worker rewrites the asserts of all ~200 test files again (10 s a
# collection) and every subprocess a test starts compiles parity's sources again.
unset PYTHONDONTWRITEBYTECODE
# Lint first (the rules are in pyproject's [tool.ruff]): a finding fails the command before the tests run.
ruff check --quiet .
# worksteal: an idle worker takes queued tests from the busy one (the slow model cells come last)
exec pytest -q -n 2 --dist worksteal "$@"
