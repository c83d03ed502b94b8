"""Where ``parity fuzz`` saves regressions (conformance/regressions/place.py): beside a
plugin's project or in ``--save-dir``, never in parity's own or any installed package tree."""

import pathlib
import sys
import sysconfig
import textwrap

import pytest

from parity.backends.registry import get_backend, unregister_backend
from parity.cli import main
from parity.conformance import fuzz, regressions
from parity.conformance.regressions.place import FOLDER, save_directory

HERE = pathlib.Path(__file__).parent
PLUGIN = textwrap.dedent('''
    from perturbed import Perturbed


    class VendorExpOff(Perturbed):
        """A vendor's backend whose float32 exp is 2**-9 off (seed 61's first 40 graphs hold one)."""

        def __init__(self):
            super().__init__("vendor_exp_off", {"exp": 1 + 2**-9})
''')


@pytest.fixture
def vendor_project(tmp_path, monkeypatch):
    """A plugin's source project: pyproject.toml, and the module of its backend under src/."""
    project = tmp_path / "vendor-project"
    (project / "src").mkdir(parents=True)
    (project / "pyproject.toml").write_text("[project]\nname = 'vendor'\n")
    (project / "src" / "vendor_exp_off.py").write_text(PLUGIN)
    monkeypatch.syspath_prepend(str(HERE))
    monkeypatch.syspath_prepend(str(project / "src"))
    monkeypatch.chdir(tmp_path)
    yield project
    unregister_backend("vendor_exp_off")
    sys.modules.pop("vendor_exp_off", None)  # the next test's project has its own copy


def _own_regressions() -> set[str]:
    return {p.name for p in regressions.DIRECTORY.iterdir()}


def test_a_plugin_s_regressions_go_beside_its_project(vendor_project):
    from vendor_exp_off import VendorExpOff

    before = _own_regressions()
    report = fuzz.run(40, seed=61, backends=[VendorExpOff()], do_shrink=False)
    saved = [f for f in report.findings if f.regression]
    assert saved and {f.saved_in for f in saved} == {str(vendor_project / FOLDER)}
    assert {r.name for r in regressions.load_all(vendor_project / FOLDER)} == {f.regression for f in saved}
    assert _own_regressions() == before
    assert f"saved {vendor_project / FOLDER}/{saved[0].regression}.ir" in "\n".join(report.lines())


def test_save_dir_wins_and_the_command_line_names_the_folder(vendor_project, tmp_path, capsys):
    before = _own_regressions()
    target = tmp_path / "elsewhere"
    code = main(["fuzz", "--budget", "40", "--seed", "61", "--no-shrink", "--plugin", "vendor_exp_off:VendorExpOff",
                 "--backend", "vendor_exp_off", "--save-dir", str(target)])
    assert code == 1  # a new finding
    assert regressions.load_all(target) and f"saved {target}/" in capsys.readouterr().out
    assert not (vendor_project / FOLDER).exists() and _own_regressions() == before


def test_an_installed_plugin_or_parity_saves_in_the_current_folder(vendor_project, tmp_path, monkeypatch):
    from vendor_exp_off import VendorExpOff

    # parity from its source checkout keeps its own folder for the built-in backends
    assert save_directory(get_backend("reference")) == regressions.DIRECTORY
    paths = dict(sysconfig.get_paths())
    monkeypatch.setattr(sysconfig, "get_paths", lambda: {**paths, "purelib": str(vendor_project),
                                                         "platlib": str(regressions.DIRECTORY.parents[1])})
    assert save_directory(VendorExpOff()) == tmp_path / FOLDER
    assert save_directory(get_backend("reference")) == tmp_path / FOLDER
