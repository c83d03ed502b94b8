#!/usr/bin/env bash
# The main job: sets up .venv if needed, runs the quickstarts, prints the op table, and runs
# the conformance suite on every installed backend on CPU (report: reports/conformance.html).
# Only the runtimes the job runs (jaxlib's XLA, onnxruntime, Triton) are installed for it; the test
# command adds every other extra to the same .venv (scripts/venv.sh).
PARITY_VENV_EXTRAS=${PARITY_VENV_EXTRAS:-xla,onnx,triton}
source "$(dirname "${BASH_SOURCE[0]}")/venv.sh"
export TRITON_INTERPRET=1
python examples/ir_by_hand.py
python examples/quickstart.py
parity ops
# --quick: every op and dtype, edge cases plus one ordinary case each (see docs/conformance.md).
# The reports are written whatever the outcome; the job's exit status is the suite's verdict
# (non-zero on an unexpected failure, a crash or a stale recorded deviation). Two worker
# processes (conformance/controller.py): the same cells as a serial run, and a crashing
# backend becomes a cell instead of ending the job.
parity conform --quick --device cpu --workers 2 --html reports/conformance.html --json reports/conformance.json \
  --markdown reports/conformance.md
