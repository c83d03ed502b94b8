# Sourced by scripts/main.sh and scripts/test.sh: create or refresh .venv, then activate it.
# torch==2.13.0 is installed first, explicitly: a bare `torch` requirement would pull a
# multi-GB CUDA build where the CPU wheel is wanted. Then parity with every extra
# (`[all]`: the xla, onnx and triton stacks, bench, hf) and the test tools (`[test]`, ruff too).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
python=${PYTHON:-}
if [ -z "$python" ]; then
  for candidate in python3.11 python3.12 python3.13 python3; do
    if command -v "$candidate" >/dev/null && "$candidate" -c 'import sys; sys.exit(sys.version_info < (3, 11))'; then
      python=$candidate; break
    fi
  done
fi
[ -n "$python" ] || { echo "parity needs Python 3.11 or newer" >&2; exit 1; }
[ -x .venv/bin/python ] || "$python" -m venv .venv
# Reinstall only when the declared dependencies changed (the stamp is pyproject's hash).
stamp=.venv/.parity-installed
want="$(sha256sum pyproject.toml | cut -d' ' -f1)"
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
  .venv/bin/python -m pip install -q --upgrade pip
  .venv/bin/python -m pip install -q "torch==2.13.0"
  .venv/bin/python -m pip install -q -e ".[all,test]"
  echo "$want" >"$stamp"
fi
# shellcheck disable=SC1091
source .venv/bin/activate
