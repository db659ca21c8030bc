"""Chip descriptions: packaged chips load; every kind of problem names file and key path."""
import copy

import pytest
import yaml

from dspsim import ConfigError
from dspsim.sim.chip.load import config_from_dict, load_config, packaged_chips


def raw(name="ft78ne"):
    with open(packaged_chips()[name]) as handle:
        return yaml.safe_load(handle)


def test_packaged_chips_load_by_name_case_insensitively():
    assert load_config("FT78NE").cores == 8
    assert load_config("mt7004").dtypes == ("fp32", "fp16")


def test_design_values():
    ft = load_config("ft78ne")
    assert ft.clock_mhz == 1000 and ft.vector.lane_width_bits == 128
    assert ft.l2.size_bytes == 512 << 10 and ft.l2.base_address == 0x10800000
    assert ft.l2.core_stride_bytes == 0x01000000 and ft.l2.local_alias_address == 0x00800000
    assert ft.ddr.base_address == 0x80000000 and ft.ddr.size_bytes == 2 << 30
    assert ft.ddr.peak_bandwidth_gbps == 10.67 and ft.ddr.bandwidth_gbps == pytest.approx(8.536)
    sram = ft.level("shared_sram")
    assert sram.base_address == 0x0C000000 and sram.size_bytes == 4 << 20
    # EDMA3: 2 transfer controllers of 256 bits at CPU/2, 8 of 128 bits at CPU/3, shared
    assert ft.dma.shared and ft.dma.setup_cycles == 200
    assert sorted(round(e.bandwidth_gbps, 3) for e in ft.dma.engines) == [5.333] * 8 + [16.0] * 2
    assert not load_config("mt7004").dma.shared
    assert [e.bandwidth_gbps for e in load_config("mt7004").dma.engines] == [12.8, 12.8]
    assert ft.launch_cycles + ft.barrier_cycles == 500
    mt = load_config("mt7004")
    assert (mt.cores, mt.clock_mhz, mt.vector.lane_width_bits) == (4, 1200, 512)
    assert mt.l2.base_address == 0x10000000 and mt.l2.size_bytes == 256 << 10
    assert mt.ddr.peak_bandwidth_gbps == 25.6


def test_every_value_in_packaged_configs_says_where_it_comes_from():
    for path in packaged_chips().values():
        with open(path) as handle:
            for number, line in enumerate(handle, 1):
                code = line.split("#")[0]
                if ":" in code and code.split(":", 1)[1].strip() not in ("", "|"):
                    if code.strip().startswith(("name:", "description:")):
                        continue
                    assert "#" in line or code.strip().startswith("-"), f"{path}:{number}: {line!r}"


def test_a_path_to_any_yaml_file_is_a_chip(tmp_path):
    data = raw()
    data["name"] = "FT78NE-wide"
    data["vector"]["lane_width_bits"] = 256
    path = tmp_path / "wide.yaml"
    path.write_text(yaml.safe_dump(data))
    cfg = load_config(str(path))
    assert cfg.name == "FT78NE-wide" and cfg.lanes("fp32") == 8


def _expect(mutate, *fragments):
    data = copy.deepcopy(raw())
    mutate(data)
    with pytest.raises(ConfigError) as info:
        config_from_dict(data, "my.yaml")
    message = str(info.value)
    assert message.startswith("my.yaml: ")
    for fragment in fragments:
        assert fragment in message
    return message


def test_unknown_key():
    _expect(lambda d: d["dma"].__setitem__("engines", 2), "dma", "unknown key 'engines'")


def test_missing_key():
    _expect(lambda d: d["memory"]["ddr"].pop("efficiency"), "memory.ddr.efficiency", "missing")


def test_wrong_type():
    _expect(lambda d: d.__setitem__("cores", "eight"), "cores", "whole number")
    _expect(lambda d: d.__setitem__("cores", True), "cores")


def test_non_positive_bandwidth():
    _expect(lambda d: d["memory"]["ddr"].__setitem__("peak_bandwidth_gbps", -1),
            "memory.ddr.peak_bandwidth_gbps", "> 0", "-1")
    _expect(lambda d: d["dma"].__setitem__("engine_bandwidth_gbps", 0),
            "dma.engine_bandwidth_gbps")


def test_lane_width_not_multiple_of_dtype():
    def mutate(d):
        d["vector"]["lane_width_bits"] = 48
    _expect(mutate, "lane_width_bits", "48", "fp32")


def test_overlapping_regions():
    _expect(lambda d: d["memory"]["shared_sram"].__setitem__("base_address", 0x90000000),
            "overlaps")


def test_address_over_32_bits():
    _expect(lambda d: d["memory"]["ddr"].__setitem__("size_mib", 4096), "32-bit")
    _expect(lambda d: d["memory"]["ddr"].__setitem__("base_address", 0x1_0000_0000), "32-bit")


def test_unknown_unit_and_dtype():
    _expect(lambda d: d["vector"]["instructions"]["add"].__setitem__("unit", "fpu"), "add", "fpu")
    _expect(lambda d: d.__setitem__("dtypes", ["fp64"]), "dtypes[0]", "fp64")


def test_unknown_chip_and_missing_file():
    with pytest.raises(ConfigError, match="known chips: ft78ne, mt7004"):
        load_config("ft99")
    with pytest.raises(ConfigError, match="does not exist"):
        load_config("nowhere/chip.yaml")


def test_broken_yaml_names_the_file(tmp_path):
    path = tmp_path / "bad.yaml"
    path.write_text("cores: [8\n")
    with pytest.raises(ConfigError, match="bad.yaml: not valid YAML"):
        load_config(str(path))


def test_dma_is_either_engines_per_core_or_a_shared_pool():
    def both(d):
        d["dma"]["engines_per_core"] = 2
        d["dma"]["engine_bandwidth_gbps"] = 5.0
    _expect(both, "dma.engines_per_core", "not both")

    def neither(d):
        del d["dma"]["controllers"]
    _expect(neither, "dma.engines_per_core", "missing", "controllers")


def test_a_controller_gives_its_bandwidth_one_way():
    def both_ways(d):
        d["dma"]["controllers"][0]["bandwidth_gbps"] = 8.0
    _expect(both_ways, "dma.controllers[0]", "bandwidth_gbps", "width_bits and clock_divider")

    def half(d):
        del d["dma"]["controllers"][1]["clock_divider"]
    _expect(half, "dma.controllers[1]")

    def nowhere(d):
        for group in d["dma"]["controllers"]:
            group["reaches"] = ["shared_sram"]
    _expect(nowhere, "no controller reaches ddr")
    _expect(lambda d: d["dma"]["controllers"][0].__setitem__("reaches", ["l3"]),
            "dma.controllers[0].reaches[0]", "'l3'")


def test_controller_bandwidth_follows_the_chip_clock():
    data = copy.deepcopy(raw())
    data["clock_mhz"] = 1200
    cfg = config_from_dict(data, "fast.yaml")
    # 256 bits at 1200 MHz / 2 = 19.2 GB/s
    assert max(e.bandwidth_gbps for e in cfg.dma.engines) == pytest.approx(19.2)


def test_tiling_policy():
    _expect(lambda d: d.__setitem__("tiling", {"policy": "largest"}), "tiling.policy", "optimal")
    _expect(lambda d: d.__setitem__("tiling", {"policy": "fixed"}), "tiling.tile_bytes")
    _expect(lambda d: d.__setitem__("tiling", {"policy": "optimal", "tile_bytes": 4096}),
            "tiling.tile_bytes")
    data = copy.deepcopy(raw())
    data["tiling"] = {"policy": "fixed", "tile_bytes": 4096}
    assert config_from_dict(data, "fixed.yaml").tiling.tile_bytes == 4096


# ----------------------------------------------------------------- instruction expansions
def _instructions(d):
    return d["vector"]["instructions"]


def test_ft78ne_has_no_special_function_unit_and_expands_its_functions():
    ft = load_config("ft78ne")
    assert "sfu" not in ft.vector.units
    for name in ("div", "exp", "tanh", "log", "sqrt", "fma"):
        spec = ft.vector.instructions[name]
        assert not spec.issues and spec.expand, name
        # fully resolved: only instructions that issue on a unit of the chip
        for issued in ft.vector.issued[name]:
            assert ft.vector.instructions[issued].unit in ft.vector.units
    # nested: tanh uses exp and div, so it comes to at least their instructions
    for issued, count in ft.vector.issued["exp"].items():
        assert ft.vector.issued["tanh"][issued] >= count


def test_mt7004_keeps_its_special_function_unit():
    mt = load_config("mt7004")
    assert mt.vector.units["sfu"] == 1
    for name in ("div", "exp", "tanh", "log", "sqrt"):
        assert mt.vector.instructions[name].unit == "sfu"
        assert dict(mt.vector.issued[name]) == {name: 1}


def test_expanding_a_mix_multiplies_nested_counts_out():
    data = raw()
    _instructions(data)["sigm"] = {"expand": {"exp": 1, "div": 2, "add": 1}}
    vec = config_from_dict(data, "my.yaml").vector
    total = vec.expand({"sigm": 3, "add": 1, "load": 2})
    want = {"load": 2, "add": 4}
    for part, per in (("exp", 3), ("div", 6)):
        for issued, n in vec.issued[part].items():
            want[issued] = want.get(issued, 0) + per * n
    assert total == want


def test_expansion_needs_one_form():
    _expect(lambda d: _instructions(d)["exp"].__setitem__("unit", "alu"),
            "vector.instructions.exp", "either unit and occupancy_cycles, or expand")
    _expect(lambda d: _instructions(d)["add"].pop("occupancy_cycles"),
            "vector.instructions.add.occupancy_cycles", "missing", "expand")
    _expect(lambda d: _instructions(d).__setitem__("erf", {}), "vector.instructions.erf")


def test_expansion_names_only_known_instructions():
    _expect(lambda d: _instructions(d)["exp"]["expand"].__setitem__("fmac", 2),
            "vector.instructions.exp.expand.fmac", "unknown instruction 'fmac'")


@pytest.mark.parametrize("count", [0, -1, 1.5, True, "two"])
def test_expansion_counts_are_positive_whole_numbers(count):
    _expect(lambda d: _instructions(d)["div"]["expand"].__setitem__("mul", count),
            "vector.instructions.div.expand.mul")


def test_expansion_cycles_are_refused():
    def loop(d):
        _instructions(d)["div"]["expand"]["tanh"] = 1  # tanh -> div -> tanh
    message = _expect(loop, "never ends", "div", "tanh")
    assert "tanh -> div -> tanh" in message or "div -> tanh -> div" in message
    _expect(lambda d: _instructions(d)["exp"].__setitem__("expand", {"exp": 1}),
            "exp -> exp")
