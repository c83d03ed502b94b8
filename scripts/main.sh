#!/usr/bin/env bash
# The main job: sets up .venv if needed, runs the quickstarts, prints the op table, and runs
# the conformance suite on every installed backend on CPU (report: reports/conformance.html).
# Only the runtimes the job runs (jaxlib's XLA, onnxruntime, Triton) are installed for it; the test
# command adds every other extra to the same .venv (scripts/venv.sh).
PARITY_VENV_EXTRAS=${PARITY_VENV_EXTRAS:-xla,onnx,triton}
source "$(dirname "${BASH_SOURCE[0]}")/venv.sh"
export TRITON_INTERPRET=1
# The quickstarts and the op table (about 10 s on one core) run beside the conformance run, on
# the core its two workers leave idle while they start; their output is printed after its summary.
examples_log="$(mktemp)"
trap 'rm -f "$examples_log"' EXIT
{ python examples/ir_by_hand.py && python examples/quickstart.py && parity ops; } >"$examples_log" 2>&1 &
examples=$!
# --quick: every op and dtype, edge cases plus one ordinary case each (see docs/conformance.md).
# The reports are written whatever the outcome; the job's exit status is the suite's verdict
# (non-zero on an unexpected failure, a crash or a stale recorded deviation). Two worker
# processes (conformance/controller.py): the same cells as a serial run, and a crashing
# backend becomes a cell instead of ending the job.
verdict=0
parity conform --quick --device cpu --workers 2 --html reports/conformance.html --json reports/conformance.json \
  --markdown reports/conformance.md || verdict=$?
examples_ok=0
wait "$examples" || examples_ok=$?
echo
echo "== the quickstarts and the op table (examples/ir_by_hand.py, examples/quickstart.py, parity ops) =="
cat "$examples_log"
if [ "$examples_ok" -ne 0 ]; then
  echo "main.sh: the quickstarts or the op table failed (exit $examples_ok): their output is above" >&2
  exit "$examples_ok"
fi
exit "$verdict"
