"""Key-path overrides of chip descriptions: the ground what-if axes and fits stand on."""
import pytest

from dspsim.sim.chip.load import config_from_dict, load_config_and_text, parse_chip_yaml
from dspsim.sim.chip.overrides import apply_overrides, numeric_keys, numeric_value, parse_set
from dspsim.sim.errors import ArgumentError, ConfigError


@pytest.fixture(scope="module")
def raw():
    _, text = load_config_and_text("mt7004")
    return parse_chip_yaml(text, "mt7004")


def test_override_changes_the_value_and_leaves_the_original(raw):
    changed = apply_overrides(raw, {"vector.lane_width_bits": 256, "cores": 8.0})
    assert changed["vector"]["lane_width_bits"] == 256
    assert changed["cores"] == 8 and isinstance(changed["cores"], int)
    assert raw["vector"]["lane_width_bits"] == 512
    assert config_from_dict(changed).cores == 8


def test_list_positions_are_reachable():
    _, text = load_config_and_text("ft78ne")
    raw = parse_chip_yaml(text, "ft78ne")
    keys = [k for k in numeric_keys(raw) if k.startswith("dma.controllers.")]
    assert keys, "FT78NE describes its DMA as controllers"
    key = next(k for k in keys if k.endswith(".count"))
    changed = apply_overrides(raw, {key: 5})
    assert numeric_value(changed, key) == 5


@pytest.mark.parametrize("key, message", [
    ("vector.lane_width", "lane_width_bits"),      # a typo lists the keys that exist
    ("name", "not a number"),
    ("vector.lane_width_bits.x", "a value, not a section"),
])
def test_bad_keys_are_named(raw, key, message):
    with pytest.raises(ConfigError, match=message):
        apply_overrides(raw, {key: 1})


@pytest.mark.parametrize("text", ["cores", "cores=", "cores=4,x", "cores=nan", "=4", "a..b=1"])
def test_bad_set_axes_are_refused(text):
    with pytest.raises(ArgumentError):
        parse_set(text)


def test_set_axis_parses_numbers():
    assert parse_set("memory.ddr.peak_bandwidth_gbps=10.67, 21.3,25.6") == (
        "memory.ddr.peak_bandwidth_gbps", [10.67, 21.3, 25.6])


def test_exponents_without_a_dot_are_numbers():
    # YAML 1.1 reads 1e300 as text; the axis is a number all the same
    assert parse_set("memory.ddr.peak_bandwidth_gbps=1e3,2.5e1") == (
        "memory.ddr.peak_bandwidth_gbps", [1000.0, 25.0])


def test_a_section_is_named_not_printed(raw):
    with pytest.raises(ConfigError) as info:
        apply_overrides(raw, {"memory": 1})
    message = str(info.value)
    assert "a section (ddr, shared_sram, l2)" in message and len(message) < 300
