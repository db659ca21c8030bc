"""Chip descriptions: packaged chips load; every kind of problem names file and key path."""
import copy

import pytest
import yaml

from dspsim import ConfigError
from dspsim.sim.config import config_from_dict, load_config, packaged_chips


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
    assert ft.shared_sram.base_address == 0x0C000000 and ft.shared_sram.size_bytes == 4 << 20
    assert (ft.dma.engines_per_core, ft.dma.engine_bandwidth_gbps, ft.dma.setup_cycles) == (2, 5.33, 200)
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
    _expect(lambda d: d["vector"]["instructions"]["exp"].__setitem__("unit", "fpu"), "exp", "fpu")
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
