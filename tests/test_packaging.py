"""What `pip install .` installs: every package of the source tree (an editable install
would hide a package the list leaves out)."""
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_every_subpackage_of_dspsim_is_installed():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    listed = set(project["tool"]["setuptools"]["packages"])
    found = {"dspsim." + p.parent.name for p in (ROOT / "dspsim").glob("*/__init__.py")}
    assert found <= listed, f"add to pyproject.toml's packages: {sorted(found - listed)}"
