"""The package layout: every package folder is listed in pyproject, and the wheel holds
only the `parity` namespace (no tests, no generic top-level modules)."""

import pathlib
import subprocess
import sys
import tomllib
import zipfile

ROOT = pathlib.Path(__file__).resolve().parents[1]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())
SETUPTOOLS = PYPROJECT["tool"]["setuptools"]


def _package_folders():
    """parity.* package name for every folder with an __init__.py under the mapped roots."""
    found = set()
    for package, folder in SETUPTOOLS["package-dir"].items():
        base = ROOT / folder
        for init in base.rglob("__init__.py"):
            rel = init.parent.relative_to(base)
            found.add(".".join((package, *rel.parts)) if rel.parts else package)
    return found


def test_every_package_folder_is_listed_in_pyproject():
    missing = _package_folders() - set(SETUPTOOLS["packages"])
    assert not missing, f"add these to [tool.setuptools] packages in pyproject.toml: {sorted(missing)}"


def test_every_listed_package_exists():
    assert set(SETUPTOOLS["packages"]) <= _package_folders()


def test_wheel_contains_only_the_parity_namespace(tmp_path):
    result = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-w", str(tmp_path), str(ROOT)],
        capture_output=True, text=True,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    (wheel,) = tmp_path.glob("parity-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    top_levels = {n.split("/")[0] for n in names}
    assert {t for t in top_levels if not t.endswith(".dist-info")} == {"parity"}
    assert not [n for n in names if "/tests/" in n or n.endswith("conftest.py")]
    assert "parity/ir/opdef.py" in names and "parity/backends/reference/backend.py" in names
