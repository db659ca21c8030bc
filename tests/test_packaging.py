"""What `pip install .` installs: every package of the source tree, the top-level sim/,
kernels/ and configs/ folders included (an editable install would hide a package the
wheel leaves out)."""
import subprocess
import sys
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _source_packages() -> set[str]:
    found = set()
    for init in (ROOT / "dspsim").rglob("__init__.py"):  # rglob follows the folder links
        parts = init.parent.relative_to(ROOT).parts
        found.add(".".join(parts))
    return found


def test_the_wheel_holds_every_package_and_chip_file(tmp_path):
    built = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w",
                            str(tmp_path), str(ROOT)], capture_output=True, text=True)
    assert built.returncode == 0, built.stderr
    wheel = next(tmp_path.glob("dspsim-*.whl"))
    names = zipfile.ZipFile(wheel).namelist()
    packages = {n.rsplit("/", 1)[0].replace("/", ".") for n in names if n.endswith("/__init__.py")}
    missing = _source_packages() - packages
    assert not missing, f"the wheel leaves out {sorted(missing)}"
    assert {"dspsim/configs/ft78ne.yaml", "dspsim/configs/mt7004.yaml",
            "dspsim/py.typed"} <= set(names)
    assert "dspsim/sim/engine/pipeline.py" in names
