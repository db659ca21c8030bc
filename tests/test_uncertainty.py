"""Assumed values' ranges in chip files, and the band of an estimate they give."""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import yaml
from terminal import dspsim_cli

import dspsim
from dspsim.sim.chip.load import packaged_chips
from dspsim.sim.chip.overrides import apply_overrides
from dspsim.sim.chip.ranges import range_end
from dspsim.sim.chip.yamlfile import BoundedLoader
from dspsim.sim.errors import ConfigError
from dspsim.uncertainty import MODEL_ERROR, call_band, chip_ranges

N = 1 << 14


def _numeric_lines(text: str) -> dict[int, str]:
    """Line number -> key path of each line holding exactly one number."""
    loader = BoundedLoader(text)
    root = loader.get_single_node()
    found: dict[int, list[str]] = {}

    def walk(node, path):
        if isinstance(node, yaml.MappingNode):
            for k, v in node.value:
                walk(v, f"{path}.{k.value}" if path else k.value)
        elif isinstance(node, yaml.SequenceNode):
            for i, v in enumerate(node.value):
                walk(v, f"{path}.{i}")
        elif node.tag.endswith((":int", ":float")):
            found.setdefault(node.end_mark.line + 1, []).append(path)

    walk(root, "")
    return {line: keys[0] for line, keys in found.items() if len(keys) == 1}


@pytest.mark.parametrize("name", sorted(packaged_chips()))
def test_every_assumed_value_of_the_packaged_chips_has_a_range(name):
    path = packaged_chips()[name]
    text = Path(path).read_text(encoding="utf-8")
    _, ranges = chip_ranges(text, path)  # every end builds a valid chip
    with_range = {r.key for r in ranges}
    lines = text.splitlines()
    for number, key in _numeric_lines(text).items():
        comment = lines[number - 1].partition("#")[2]
        if re.search(r"\bassumed\b", comment):
            assert key in with_range, f"{name} line {number}: {key} is assumed without a range"
    assert all(r.reason for r in ranges)


def _chip_file(tmp_path, change: str, new: str) -> str:
    text = Path(packaged_chips()["ft78ne"]).read_text(encoding="utf-8")
    lines = text.splitlines()
    index = next(i for i, line in enumerate(lines) if line.lstrip().startswith(change))
    lines[index] = new
    path = tmp_path / "chip.yaml"
    path.write_text("\n".join(lines) + "\n")
    return str(path)


@pytest.mark.parametrize("line,message", [
    ("  setup_cycles: 200  # assumed, range 300..400: far", "must lie within its range"),
    ("  burst_bytes: 128  # assumed, range 64.5..256: bursts", "is a whole number"),
    ("  setup_cycles: 200  # assumed, range 100..400", "say why the range"),
    ("  setup_cycles: 200  # assumed, range 0..400: none at all",
     None),  # a valid range: zero setup is a chip the model accepts
    ("  burst_bytes: 128  # assumed, range 0..256: bursts", "the low end of dma.burst_bytes"),
])
def test_a_bad_range_names_its_key(tmp_path, line, message):
    key = line.split(":")[0].strip()
    path = _chip_file(tmp_path, key + ":", line)
    text = Path(path).read_text()
    if message is None:
        chip_ranges(text, path)
        return
    with pytest.raises(ConfigError, match=message):
        chip_ranges(text, path)


def test_the_structured_form_and_a_key_given_twice(tmp_path):
    text = Path(packaged_chips()["mt7004"]).read_text(encoding="utf-8")
    extra = ("assumed_ranges:\n  dma.setup_cycles: {low: 100, high: 300, reason: measured "
             "spread}\n")
    path = tmp_path / "m.yaml"
    path.write_text(text.replace("dma.setup_cycles", "x") + extra)
    with pytest.raises(ConfigError, match="dma.setup_cycles has a range twice"):
        chip_ranges(path.read_text(), str(path))
    cleaned = re.sub(r"(setup_cycles: 150\s+)#.*", r"\1# assumed", text)
    path.write_text(cleaned + extra)
    _, ranges = chip_ranges(path.read_text(), str(path))
    entry = next(r for r in ranges if r.key == "dma.setup_cycles")
    assert (entry.low, entry.high, entry.reason) == (100, 300, "measured spread")
    dspsim.Chip(str(path))  # the section is a valid part of a chip file
    path.write_text(cleaned + "assumed_ranges:\n  dma.nothing: {low: 1, high: 2, reason: x}\n")
    with pytest.raises(ConfigError, match="nothing"):
        chip_ranges(path.read_text(), str(path))


def _band(chip: dspsim.Chip, op: str, mask: int):
    for address in (0x80000000, 0x81000000):
        chip.zero(address, N, "fp32")
    result = chip.call(op, 0x80000000, 0x81000000, 0x82000000, N, mask, numerics=False)
    bound = chip.bind(op, (0x80000000, 0x81000000, 0x82000000, N), {"core_mask": mask},
                      require_written=False)
    return result, call_band(chip, bound, result.cycles, result.metadata["transfer_timing"],
                             source=chip.config.source)


def _cycles_with(tmp_path, base: str, overrides: dict, op: str, mask: int) -> int:
    """The call on a chip FILE written with ``overrides``: the band re-run independently."""
    raw = yaml.load(Path(packaged_chips()[base]).read_text(), Loader=BoundedLoader)
    path = tmp_path / f"edited-{len(list(tmp_path.iterdir()))}.yaml"
    path.write_text(yaml.safe_dump(apply_overrides(raw, overrides)))
    chip = dspsim.Chip(str(path))
    for address in (0x80000000, 0x81000000):
        chip.zero(address, N, "fp32")
    return chip.call(op, 0x80000000, 0x81000000, 0x82000000, N, mask, numerics=False).cycles


@pytest.mark.parametrize("base,op,mask", [("ft78ne", "fp_relu_grad_s", 0xFF),
                                           ("mt7004", "fp_gelu_grad_s", 0x1)])
def test_the_band_holds_when_rerun_at_the_range_ends(tmp_path, base, op, mask):
    chip = dspsim.Chip(base)
    result, band = _band(chip, op, mask)
    assert band.cycles == result.cycles
    assert band.band_low < result.cycles < band.band_high
    _, ranges = chip_ranges(chip.description_yaml, base)
    by_key = {r.key: r for r in ranges}
    for effect in band.dominant(2):
        for end, cycles in (("low", effect.low_cycles), ("high", effect.high_cycles)):
            again = _cycles_with(tmp_path, base, {effect.key: range_end(by_key[effect.key], end)},
                                 op, mask)
            assert again == cycles
            assert band.band_low <= again <= band.band_high
    # the combined extreme: every moving key at its cycle-raising end at once
    raising = {k.key: range_end(by_key[k.key], "high" if k.high_cycles >= k.low_cycles
                                else "low") for k in band.keys if k.swing}
    worst = _cycles_with(tmp_path, base, raising, op, mask)
    assert worst == band.combined_high_cycles <= band.high_cycles
    assert band.model_error == MODEL_ERROR[result.metadata["transfer_timing"]]


def test_model_error_table_bounds_fast_against_detailed():
    """The documented error is what the fast model does against the detailed reference."""
    for chip_name, op, n, mask in (("ft78ne", "fp_relu_grad_s", 20000, 0xF),
                                   ("mt7004", "fp_h_swish_grad_s", 12345, 0x3),
                                   ("ft78ne", "fp_gelu_grad_s", 1 << 16, 0xFF)):
        chip = dspsim.Chip(chip_name)
        for address in (0x80000000, 0x81000000):
            chip.zero(address, n, "fp32")
        args = (0x80000000, 0x81000000, 0x82000000, n, mask)
        fast = chip.call(op, *args, numerics=False)
        detailed = chip.call(op, *args, numerics=False, fidelity="detailed")
        error = abs(fast.cycles - detailed.cycles) / detailed.cycles
        assert error <= MODEL_ERROR[fast.metadata["transfer_timing"]], (chip_name, op, error)


def test_json_carries_the_band_and_program_has_one():
    done = dspsim_cli("run", "fp_relu_grad_s", "--length", "2^14", "--no-trace",
                      "--uncertainty", "--json")
    assert done.returncode == 0, done.stderr
    band = json.loads(done.stdout)["uncertainty"]
    assert band["band_low"] <= band["cycles"] <= band["band_high"]
    assert band["keys"][0]["swing"] >= band["keys"][-1]["swing"]
    assert any(k["key"] == "memory.ddr.efficiency" for k in band["keys"])
    text = dspsim_cli("program", "examples/mlp_backward_split.yaml", "--timing-only",
                      "--param", "hidden_len=8192", "--uncertainty",
                      cwd=str(Path(__file__).resolve().parent.parent))
    assert text.returncode == 0, text.stderr
    assert "band" in text.stdout and "memory.ddr.efficiency" in text.stdout
