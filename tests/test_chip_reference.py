"""The chip-key reference of the docs site is generated from the schema: every key of the
chip format appears with a unit for every number and a meaning, every value of each
packaged chip file appears with its source, and a key the docs do not know fails it."""
from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest
import yaml

from dspsim.sim.chip import key_docs
from dspsim.sim.chip.load import packaged_chips
from dspsim.sim.chip.reference import chip_values, key_table, schema_keys
from dspsim.sim.errors import ConfigError

ROOT = Path(__file__).resolve().parent.parent
HOOK = ROOT / "docs" / "hooks" / "chip_keys.py"


def _hook():
    spec = importlib.util.spec_from_file_location("chip_keys_hook", HOOK)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def page() -> str:
    hook = _hook()
    source = (ROOT / "docs" / "chip-keys.md").read_text(encoding="utf-8")
    assert hook.MARKER in source
    assert "docs/hooks/chip_keys.py" in (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    return hook.on_page_markdown(source, page=None)


def test_every_schema_key_appears_once_as_a_row(page):
    keys = [key for key, _ in schema_keys()]
    assert len(keys) > 50 and len(set(keys)) == len(keys)
    for key in keys:
        assert page.count(f"| `{key}` |") >= 1, key
    assert {"dma.controllers.<i>.clock_divider", "vector.units.<unit>",
            "vector.instructions.<instruction>.expand.<instruction>"} <= set(keys)


def test_every_number_has_a_unit_and_every_key_a_meaning():
    kinds = dict(schema_keys())
    for row in key_table():
        assert row.meaning.strip(), row.key
        if kinds[row.key].kind in ("int", "number"):
            assert row.unit, row.key
    units = {row.key: row.unit for row in key_table()}
    assert units["memory.<name>.peak_bandwidth_gbps"] == "GB/s"
    assert units["memory.<name>.load_store_bytes_per_cycle"] == "bytes/cycle"
    assert units["memory.<name>.efficiency"] == "fraction"


def test_allowed_values_come_from_the_schema():
    allowed = {row.key: row.allowed for row in key_table()}
    assert allowed["clock_mhz"] == "number, > 0"
    assert allowed["dma.setup_cycles"] == "number, ≥ 0"
    assert "optional" in allowed["tiling"] and "optimal, fixed" in allowed["tiling.policy"]
    assert "in (0, 1]" in allowed["memory.<name>.efficiency"]


@pytest.mark.parametrize("name", sorted(packaged_chips()))
def test_every_value_of_a_packaged_chip_appears_with_its_source(page, name):
    text = Path(packaged_chips()[name]).read_text(encoding="utf-8")
    rows = chip_values(text)
    assert yaml.safe_load(text)["name"] in page
    for key, value, _ in rows:
        assert f"| `{key}` | `{value}` |" in page, key
    sources = dict((key, comment) for key, _, comment in rows)
    assert sources["memory.ddr.efficiency"].startswith("assumed")
    assert sources["clock_mhz"]  # every number of a packaged chip says where it comes from


def test_a_schema_key_without_a_meaning_fails_the_reference(monkeypatch):
    docs = dict(key_docs.KEY_DOCS)
    del docs["dma.burst_bytes"]
    monkeypatch.setattr("dspsim.sim.chip.reference.KEY_DOCS", docs)
    with pytest.raises(ConfigError, match="undocumented.*dma.burst_bytes"):
        key_table()


def test_a_meaning_for_no_key_fails_the_reference(monkeypatch):
    docs = dict(key_docs.KEY_DOCS, **{"dma.gone_key": key_docs.KeyDoc("no such key")})
    monkeypatch.setattr("dspsim.sim.chip.reference.KEY_DOCS", docs)
    with pytest.raises(ConfigError, match="no such key.*dma.gone_key"):
        key_table()


def test_a_hash_inside_a_value_is_not_taken_for_a_comment():
    rows = chip_values("name: 'a # b'   # the source\nclock_mhz: 1000\n")
    assert rows == [("name", "'a # b'", "the source"), ("clock_mhz", "1000", "")]


def test_a_comment_continued_in_its_column_is_one_source():
    text = ("units:\n  alu: 2   # one per side:\n           # .L and .S\n"
            "  # a comment of its own\n  mul: 2   # .M\n")
    assert chip_values(text) == [("units.alu", "2", "one per side: .L and .S"),
                                 ("units.mul", "2", ".M")]
