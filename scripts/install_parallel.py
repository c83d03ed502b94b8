"""``pip install FIRST REST...`` on two cores: FIRST's wheel installs while pip resolves the rest.

pip installs what it resolved one wheel after another on one core (unpacking, then
byte-compiling every module), and on a fresh clone that was 38 s of the main job while the
other core sat idle; torch alone was 17 s of it. Here:

1. FIRST (``torch==2.13.0``, a pinned requirement) installs at once, without its dependencies;
2. meanwhile pip resolves all the arguments (``--dry-run --report``): the same resolution
   as a plain ``pip install FIRST REST...``;
3. then every other distribution it chose installs, pinned to the version it chose and without
   dependencies, by two pips on halves of about equal size, beside one that installs the
   editable project (it builds a wheel first).

Each pip installs its own distributions, so none writes another's files. Any failure falls
back to a plain ``pip install FIRST REST...``, after the pips still running have ended.

Run by scripts/venv.sh with the venv's python (standard library only)::

    .venv/bin/python scripts/install_parallel.py "torch==2.13.0" -e ".[xla,onnx,triton]"
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
import urllib.parse
import urllib.request


def pip(*args: str) -> list[str]:
    return [sys.executable, "-m", "pip", *args]


def resolve(args: list[str]) -> list[dict]:
    """What ``pip install args`` would install: the ``install`` items of pip's report."""
    with tempfile.TemporaryDirectory() as tmp:
        report = os.path.join(tmp, "report.json")
        subprocess.run(pip("install", "-q", "--dry-run", "--report", report, *args), check=True)
        with open(report) as f:
            return json.load(f)["install"]


def project_name(requirement: str) -> str:
    """The normalized distribution name of a requirement such as ``torch==2.13.0``."""
    return re.sub(r"[-_.]+", "-", re.match(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)", requirement).group(1)).lower()


def pinned(item: dict) -> list[str]:
    """pip arguments that install exactly the distribution pip resolved for ``item``."""
    info = item["download_info"]
    if info.get("dir_info", {}).get("editable"):
        return ["-e", urllib.request.url2pathname(urllib.parse.urlparse(info["url"]).path)]
    if item.get("is_direct"):  # a URL or path the caller named
        return [info["url"]]
    return [f"{item['metadata']['name']}=={item['metadata']['version']}"]


def wheel_size(item: dict) -> int:
    """The size of the file pip chose: a local one is measured, a remote one counts 64 MiB (the
    remote ones here are runtimes: triton, onnxruntime)."""
    url = item["download_info"]["url"]
    if url.startswith("file:"):
        try:
            return os.path.getsize(urllib.request.url2pathname(urllib.parse.urlparse(url).path))
        except OSError:
            pass
    return 64 << 20


def halves(items: list[dict]) -> tuple[list[dict], list[dict]]:
    """``items`` in two sets of about equal size, each placed, largest first, in the smaller."""
    sets: tuple[list[dict], list[dict]] = ([], [])
    totals = [0, 0]
    for item in sorted(items, key=wheel_size, reverse=True):
        k = totals.index(min(totals))
        sets[k].append(item)
        totals[k] += wheel_size(item)
    return sets


def install(first: str, rest: list[str]) -> int:
    started = [subprocess.Popen(pip("install", "-q", "--no-deps", first))]
    try:
        items = resolve([first, *rest])
    except (subprocess.CalledProcessError, OSError, KeyError, ValueError) as e:
        return _fallback(started, first, rest, f"pip's resolution failed ({e})")
    skip = project_name(first)
    others = [i for i in items if project_name(i["metadata"]["name"]) != skip]
    editable = [i for i in others if i["download_info"].get("dir_info", {}).get("editable")]
    wheels = [i for i in others if i not in editable]
    for part in [p for p in halves(wheels) if p] + [[i] for i in editable]:
        started.append(subprocess.Popen(pip("install", "-q", "--no-deps", *[a for i in part for a in pinned(i)])))
    if all(code == 0 for code in [p.wait() for p in started]):
        return 0
    return _fallback([], first, rest, "a parallel pip failed")


def _fallback(running: list[subprocess.Popen], first: str, rest: list[str], why: str) -> int:
    for p in running:
        p.wait()
    print(f"install_parallel: {why}; installing in one pip", file=sys.stderr)
    return subprocess.run(pip("install", "-q", first, *rest)).returncode


if __name__ == "__main__":
    sys.exit(install(sys.argv[1], sys.argv[2:]))
