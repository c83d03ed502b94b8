#!/usr/bin/env bash
# The test command: sets up .venv if needed, then runs the whole test suite on CPU.
source "$(dirname "${BASH_SOURCE[0]}")/venv.sh"
# The out-of-tree backend template is installed (once) so that CI certifies it through its entry point.
python -c "import parity_numpy_backend" 2>/dev/null ||
  python -m pip install -q --no-deps --no-build-isolation -e examples/plugin_template
export TRITON_INTERPRET=1
exec pytest -q -n 2 "$@"
