#!/usr/bin/env bash
# The main job: sets up .venv if needed, then runs the quickstart and prints the op table.
source "$(dirname "${BASH_SOURCE[0]}")/venv.sh"
export TRITON_INTERPRET=1
python examples/ir_by_hand.py
parity ops
