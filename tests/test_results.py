"""RunResult as data: a short repr, complete JSON that round-trips, a saved run."""
import dataclasses
import json
import os

import numpy as np
import pytest

import dspsim
from dspsim.result import RunResult
from dspsim.tables import to_jsonable
from dspsim.traces.formats import load_trace, validate_trace


@pytest.fixture(scope="module")
def result():
    rng = np.random.default_rng(5)
    _, result = dspsim.simulate("fp_gelu_grad_s", rng.standard_normal(70000),
                                rng.standard_normal(70000), chip="ft78ne", core_mask=0x10f)
    return result


def test_repr_is_one_short_line(result):
    text = repr(result)
    assert len(text) < 200 and "\n" not in text
    assert "fp_gelu_grad_s" in text and f"{result.cycles:,}" in text and result.bound in text
    assert len(repr(result.per_core)) < 120 * len(result.per_core)


def test_to_dict_is_json_and_complete(result):
    data = result.to_dict()
    text = json.dumps(data, allow_nan=False)  # plain JSON, no NaN or objects
    fields = {f.name for f in dataclasses.fields(RunResult)} - {"timing"}
    assert fields <= set(data)
    assert set(RunResult.DERIVED) <= set(data)
    assert data["warnings"] and "0x10f" in data["warnings"][0]  # the ignored mask bit
    core = data["per_core"][0]
    assert {"core", "start", "stop", "elements", "tiles", "busy_cycles", "idle_cycles",
            "finish_cycle"} <= set(core)
    assert data["metadata"]["params"] == {} and data["metadata"]["fidelity"] == "fast"
    assert RunResult.from_dict(json.loads(text)).to_dict() == data


def test_a_new_field_flows_into_the_json():
    @dataclasses.dataclass
    class TileChoice:
        elements: int
        why: str

    @dataclasses.dataclass(repr=False)
    class Extended(RunResult):
        tile_choice: TileChoice | None = None

    base = dspsim.simulate("fp_relu_grad_s", np.ones(100), np.ones(100))[1]
    values = {f.name: getattr(base, f.name) for f in dataclasses.fields(RunResult)}
    extended = Extended(**values, tile_choice=TileChoice(96, "fits L2"))
    assert extended.to_dict()["tile_choice"] == {"elements": 96, "why": "fits L2"}


def test_to_jsonable_handles_numpy_and_non_finite_numbers():
    data = to_jsonable({"a": np.float32(1.5), "b": (np.int64(2), float("inf")), 3: None})
    assert data == {"a": 1.5, "b": [2, None], "3": None}


def test_save_writes_three_files_and_replaces_only_its_own(tmp_path, result):
    chip = dspsim.Chip("ft78ne")
    folder = tmp_path / "saved"
    paths = result.save(folder, chip_yaml=chip.description_yaml, extra={"note": "first"})
    assert sorted(os.listdir(folder)) == ["chip.yaml", "result.json", "trace.pftrace"]
    assert sorted(paths) == ["chip", "result", "trace"]
    document = json.loads((folder / "result.json").read_text())
    assert document["note"] == "first" and document["result"] == result.to_dict()
    assert validate_trace(load_trace(folder / "trace.pftrace")) == []
    result.save(folder, chip_yaml=chip.description_yaml, extra={"note": "second"})
    assert json.loads((folder / "result.json").read_text())["note"] == "second"
    assert not [n for n in os.listdir(tmp_path) if n.startswith(".")]  # no staging left


def test_save_into_a_file_or_a_foreign_folder_fails_cleanly(tmp_path, result):
    target = tmp_path / "file"
    target.write_text("x")
    with pytest.raises(dspsim.ArgumentError, match="not a folder"):
        result.save(target, chip_yaml="")
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "keep.txt").write_text("x")
    with pytest.raises(dspsim.ArgumentError, match="holds other files"):
        result.save(tmp_path / "other", chip_yaml="")
    assert os.listdir(tmp_path / "other") == ["keep.txt"]
    assert sorted(os.listdir(tmp_path)) == ["file", "other"]


def test_achieved_bandwidth_never_divides_by_zero(result):
    fast = dataclasses.replace(result, clock_mhz=1e308)
    assert fast.achieved_gbps == 0.0 and fast.share_of_ddr_peak == 0.0
