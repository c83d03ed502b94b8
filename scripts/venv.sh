# Sourced by scripts/main.sh and scripts/test.sh: create or refresh .venv, then activate it.
# torch==2.13.0 is named first, explicitly: a bare `torch` requirement would pull a multi-GB
# CUDA build where the CPU wheel is wanted. It installs while pip resolves parity with the extras asked for
# (by default `[all]`: every backend's stack, bench, hf, jax, distributed; and `[test]`, ruff too).
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
# Which extras: PARITY_VENV_EXTRAS (comma-separated), else every extra and the test tools. The main
# job asks only for the runtimes it runs (xla, onnx, triton): a fresh clone's first run then
# skips ~1.5 GB of wheels it never imports (Monarch and its pyarrow, Flax, transformers, ...).
extras=${PARITY_VENV_EXTRAS:-all,test}
# The stamp: pyproject's hash on its first line, then each extra installed with it. An extra is
# there when the hash matches and the stamp lists it (or lists "all", which holds every extra but
# "test"); a missing one is installed beside the ones the stamp lists.
stamp=.venv/.parity-installed
want="$(sha256sum pyproject.toml | cut -d' ' -f1)"
have=""
if [ -f "$stamp" ] && [ "$(head -n 1 "$stamp")" = "$want" ]; then
  have="$(tail -n +2 "$stamp" | paste -sd, -)"
fi
missing=""
for extra in ${extras//,/ }; do
  case ",$have," in
    *",$extra,"*) ;;
    *",all,"*) [ "$extra" = test ] && missing="$missing,$extra" ;;
    *) missing="$missing,$extra" ;;
  esac
done
if [ -n "$missing" ]; then
  union="$(echo "$have$missing" | tr , '\n' | grep -v '^$' | sort -u | paste -sd, -)"
  .venv/bin/python -m pip install -q --upgrade pip  # (--report, which the next step uses, needs pip 22.2)
  # torch first, pinned; pip's resolution of the rest and its install run beside it on the
  # other core (scripts/install_parallel.py: 28 s instead of 38 on a fresh clone)
  .venv/bin/python scripts/install_parallel.py "torch==2.13.0" -e ".[$union]"
  { echo "$want"; echo "$union" | tr , '\n'; } >"$stamp"
fi
# shellcheck disable=SC1091
source .venv/bin/activate
