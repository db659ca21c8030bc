"""How far to trust an estimate: the band its chip's assumed values' ranges give, plus the
model's own documented error.

For every stated range (see :mod:`dspsim.sim.chip.ranges`) the same call (or program) is
timed again with that one value at its low end and at its high end, the others as given:
the one-at-a-time effects, ranked by how far they move the cycles. The combined extremes
then set every value at once to the end that made the cycles lower (or higher) on its own,
which is the extreme of the box of ranges wherever each key moves the cycles one way only.
The band reported is the widest of all those timings, widened by the timing model's own
documented error for the way the call's transfers were timed (:data:`MODEL_ERROR`).

A timing is a plain function of a chip config, so calls and programs share all of this.
"""
from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

from dspsim.seam import job_for
from dspsim.sim.chip.load import ChipConfig, config_from_dict, parse_chip_yaml
from dspsim.sim.chip.overrides import apply_overrides
from dspsim.sim.chip.ranges import AssumedRange, assumed_ranges, check_range_ends, range_end
from dspsim.sim.engine.machine import run_job
from dspsim.sim.errors import ArgumentError, DspSimError

#: The fast model's largest difference from the detailed one, by how a call's transfers
#: were timed, rounded up to a tenth of a percent, over the fidelity grid
#: (`python benchmarks/fidelity_grid.py`, and `--staggered` for its large calls): bursts
#: 0.18%, fluid 0.27% (a random MT7004 with 4-byte L2 ports), none (private storage)
#: 0.87%, staggered 8.16% (a known miss held beside the grid, `PORT_BOUND_POOL_REGIME`:
#: a random MT7004 with four controllers for four cores behind 4-byte ports that all but
#: saturate DDR; the grid's own known miss, a random FT78NE pool of the same kind, 2.54%;
#: the packaged chips' staggered cases stay within 0.12%). The detailed model is the
#: reference: its own error against silicon is what the assumed ranges, and what the
#: model leaves out, stand for.
MODEL_ERROR = {"bursts": 0.002, "fluid": 0.003, "staggered": 0.082, "none": 0.009}
MODEL_ERROR_SOURCE = ("fast vs detailed fidelity, largest difference on the fidelity grid, "
                      "its staggered cases and the cases held beside it")

#: A timing: cycles of the call or program on a chip config (raises DspSimError if the
#: chip cannot run it).
Timer = Callable[[ChipConfig], float]


@dataclass
class KeyEffect:
    """What one assumed value's range does to the cycles, the others as given."""

    key: str
    value: float
    low: float
    high: float
    reason: str
    low_cycles: float | None
    high_cycles: float | None
    problem: str | None = None  # why an end could not be timed

    @property
    def swing(self) -> float:
        if self.low_cycles is None or self.high_cycles is None:
            return 0.0
        return abs(self.high_cycles - self.low_cycles)


@dataclass
class Band:
    """An estimate's cycles with the band around them."""

    cycles: float  # as estimated, every value as given
    low_cycles: float  # fewest cycles over the timings at range ends
    high_cycles: float  # most
    combined_low_cycles: float | None  # every value at its cycle-lowering end at once
    combined_high_cycles: float | None
    model_error: float  # relative, the fast model's documented error (0 for detailed)
    model_error_source: str
    keys: list[KeyEffect] = field(default_factory=list)  # by swing, largest first
    without_range: list[dict[str, Any]] = field(default_factory=list)  # range none: why

    @property
    def band_low(self) -> float:
        return self.low_cycles * (1 - self.model_error)

    @property
    def band_high(self) -> float:
        return self.high_cycles * (1 + self.model_error)

    def dominant(self, count: int = 3) -> list[KeyEffect]:
        """The keys that move the cycles most (those that move them at all)."""
        return [k for k in self.keys if k.swing > 0][:count]

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["band_low"], data["band_high"] = self.band_low, self.band_high
        total = sum(k.swing for k in self.keys) or 1.0
        for entry, key in zip(data["keys"], self.keys, strict=True):
            entry["swing"] = key.swing
            entry["share_of_swings"] = key.swing / total
        return data


def chip_ranges(text: str, source: str) -> tuple[Any, list[AssumedRange]]:
    """A chip file's parsed description and its checked ranges (each end a valid chip)."""
    raw = parse_chip_yaml(text, source)
    ranges = assumed_ranges(raw, text, source)
    check_range_ends(raw, ranges, source, config_from_dict)
    return raw, ranges


def _timed(timer: Timer, raw: Any, overrides: dict[str, Any], source: str
           ) -> tuple[float | None, str | None]:
    try:
        return float(timer(config_from_dict(apply_overrides(raw, overrides, source), source))), \
            None
    except DspSimError as exc:
        return None, str(exc)


def unused_instruction_keys(raw: Any, mixes: list[dict[str, int]]) -> Callable[[str], bool]:
    """A predicate: whether a key is an instruction's or a unit's that none of ``mixes``
    issues (with the chip's expansions resolved), so that its value cannot enter the
    timing. The model reads only the instructions a call issues and their units."""
    instructions = (raw.get("vector") or {}).get("instructions") or {}
    used: set[str] = set()
    pending = [name for mix in mixes for name in mix]
    while pending:  # an instruction, and what it expands to
        name = pending.pop()
        if name in used or name not in instructions:
            continue
        used.add(name)
        pending.extend((instructions[name] or {}).get("expand") or {})
    units = {(instructions[name] or {}).get("unit") for name in used}

    def unused(key: str) -> bool:
        parts = key.split(".")
        if parts[:2] == ["vector", "instructions"] and len(parts) > 2:
            return parts[2] not in used
        if parts[:2] == ["vector", "units"] and len(parts) > 2:
            return parts[2] not in units
        return False
    return unused


def uncertainty_band(text: str | None, source: str, timer: Timer, cycles: float,
                     dma_models: list[str], fidelity: str = "fast",
                     mixes: list[dict[str, int]] | None = None) -> Band:
    """The band of an estimate of ``cycles`` on the chip file ``text`` (see the module).

    ``timer`` times the same work on another config; ``dma_models`` are how its transfers
    were timed (one per call), which sets the model's own error; ``mixes`` the calls'
    instruction mixes: an instruction or unit none of them uses is not timed again (its
    value cannot change the cycles), nor is an end equal to the value as given.
    """
    if text is None:
        raise ArgumentError("an uncertainty band needs the chip's file (its ranges are "
                            "written there); load the chip by name or path, not as a "
                            "ChipConfig")
    raw, ranges = chip_ranges(text, source)
    unused = unused_instruction_keys(raw, mixes) if mixes is not None else (lambda key: False)
    effects = []

    def at_end(entry: AssumedRange, end: str) -> tuple[float | None, str | None]:
        if unused(entry.key) or range_end(entry, end) == entry.value:
            return cycles, None
        return _timed(timer, raw, {entry.key: range_end(entry, end)}, source)

    for entry in ranges:
        if not entry.has_range:
            continue
        low, problem_low = at_end(entry, "low")
        high, problem_high = at_end(entry, "high")
        effects.append(KeyEffect(entry.key, entry.value, *entry.bounds, entry.reason,
                                 low, high, problem_low or problem_high))
    effects.sort(key=lambda k: -k.swing)
    moving = [k for k in effects if k.swing > 0]
    combined = {}
    for direction in ("low", "high"):
        chosen = {}
        for k in moving:
            assert k.low_cycles is not None and k.high_cycles is not None, "it swings"
            lower_end = "low" if k.low_cycles <= k.high_cycles else "high"
            end = lower_end if direction == "low" else ("high" if lower_end == "low" else "low")
            chosen[k.key] = range_end(next(r for r in ranges if r.key == k.key), end)
        combined[direction] = _timed(timer, raw, chosen, source)[0] if chosen else cycles
    timings = [cycles] + [c for k in effects for c in (k.low_cycles, k.high_cycles)
                          if c is not None] + [c for c in combined.values() if c is not None]
    error = 0.0 if fidelity != "fast" else max((MODEL_ERROR.get(m, max(MODEL_ERROR.values()))
                                                for m in dma_models), default=0.0)
    return Band(cycles, min(timings), max(timings), combined["low"], combined["high"], error,
                MODEL_ERROR_SOURCE if error else "detailed fidelity: the model's reference",
                effects, [{"key": r.key, "value": r.value, "reason": r.reason}
                          for r in ranges if not r.has_range])


def call_timer(job_for_config: Callable[[ChipConfig], Any], fidelity: str) -> Timer:
    """A Timer for one call: ``job_for_config(config)`` gives its Job on a config."""

    def timer(config: ChipConfig) -> float:
        return math.ceil(run_job(config, job_for_config(config), fidelity=fidelity,
                                 record_slices=False).cycles - 1e-9)
    return timer


def call_band(chip, bound, cycles: float, dma_model: str, *, fidelity: str = "fast",
              tile_bytes: int | None = None, source: str = "chip") -> Band:
    """The band of one call's estimate (``bound``: the checked call on ``chip``)."""
    job = job_for(bound, tile_bytes)
    return uncertainty_band(chip.description_yaml, source, call_timer(lambda _c: job, fidelity),
                            cycles, [dma_model], fidelity, [dict(job.mix)])


def program_band(loaded, result, *, fidelity: str = "fast", source: str = "chip") -> Band:
    """The band of a program's estimate (``loaded``: its ProgramFile, ``result`` its
    ProgramResult)."""
    program = loaded.program

    def timer(config: ChipConfig) -> float:
        return math.ceil(program.cycles_on(config, fidelity=fidelity) - 1e-9)

    mixes = [dict(c.bound.cname.operator.mix) for c in program.calls]
    return uncertainty_band(loaded.chip.description_yaml, source, timer, result.cycles,
                            [c.transfer_timing for c in result.calls], fidelity, mixes)
