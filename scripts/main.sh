#!/usr/bin/env bash
# The main job: sets up .venv if needed, runs the quickstart, prints the op table, and runs
# the conformance suite on every installed backend on CPU (report: reports/conformance.html).
source "$(dirname "${BASH_SOURCE[0]}")/venv.sh"
export TRITON_INTERPRET=1
python examples/ir_by_hand.py
parity ops
# --quick: every op and dtype, edge cases plus one ordinary case each (see docs/conformance.md).
# The report is the product here; an unexpected result is announced, not turned into a failed job.
parity conform --quick --device cpu --html reports/conformance.html --json reports/conformance.json \
  || echo "parity conform: unexpected results (exit $?); see reports/conformance.html"
