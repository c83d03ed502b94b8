#!/usr/bin/env bash
# The test command: sets up .venv if needed, then runs the whole test suite on CPU.
source "$(dirname "${BASH_SOURCE[0]}")/venv.sh"
export TRITON_INTERPRET=1
exec pytest -q -n 2 "$@"
