"""The chip as a function of the keys being fitted: values in, predicted cycles out.

:class:`ChipModel` holds the chip file's text and parsed description and builds a validated
:class:`~dspsim.sim.chip.load.ChipConfig` for any values of the chosen keys (through
:mod:`dspsim.sim.chip.overrides`, so that a value the chip cannot have is refused by the same
checks as a hand-edited file). :class:`CallTimer` times every measured call on such a
config, timing only, with its operands placed where ``dspsim run`` places them.

Timing is what a fit spends its time on, so the timer keeps what does not change from one
set of values to the next: each call is bound (resolved, placed, checked) once per memory
map; and a shared-storage call may reuse the tile size it chose at other values instead
of searching again (``tiles=``), which is the same simulation as the search's for that
tile and several times cheaper.
"""
from __future__ import annotations

import math
import os
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from dspsim.binding import BoundCall
from dspsim.calibration.measurements import Measurement, MeasurementError
from dspsim.chip import Chip, PreparedCall
from dspsim.placement import c_arguments, place_operands
from dspsim.sim.chip.load import (
    ChipConfig,
    config_from_dict,
    parse_chip_yaml,
    read_chip_text,
    resolve_chip_path,
)
from dspsim.sim.chip.overrides import apply_overrides, numeric_value, split_key, whole_number_key
from dspsim.sim.errors import ArgumentError, CapacityError, ConfigError, DspSimError

#: How far (in units, or a tenth of the value if more) a whole number is moved to find a
#: value the chip accepts.
SNAP_STEPS = 64


@dataclass(frozen=True)
class FitKey:
    """One key being fitted: where it is, its value in the chip file, whether the format
    takes only whole numbers there."""

    key: str
    original: float
    whole: bool


class ChipModel:
    """A chip description whose fitted keys can take any values."""

    def __init__(self, chip: str | os.PathLike, keys: Sequence[str]) -> None:
        self.path = resolve_chip_path(chip)
        self.text = read_chip_text(self.path)
        self.raw = parse_chip_yaml(self.text, self.path)
        self.config = config_from_dict(self.raw, self.path)
        if not keys:
            raise ArgumentError("--fit names no key; give the chip keys to fit, for example "
                                "--fit memory.ddr.efficiency,dma.setup_cycles")
        seen: set[str] = set()
        self.keys: list[FitKey] = []
        for key in keys:
            key = ".".join(split_key(key))
            if key in seen:
                raise ArgumentError(f"--fit: key {key!r} given twice")
            seen.add(key)
            value = numeric_value(self.raw, key, self.path)
            if value <= 0:
                raise ConfigError(f"{self.path}: chip key {key!r} is {value}; a fit scales "
                                  f"values on a log scale, so it must start from a positive "
                                  f"value: set one in the chip file")
            self.keys.append(FitKey(key, float(value), whole_number_key(key)))
        self._snapped: dict[tuple, dict[str, float]] = {}

    @property
    def originals(self) -> np.ndarray:
        return np.array([k.original for k in self.keys])

    def applied(self, values: Iterable[float]) -> dict[str, float]:
        """The values as they would be written: whole numbers rounded where the format
        takes only whole numbers, and moved to the nearest whole number the chip accepts
        where it takes only some (a lane width must be a multiple of every dtype's
        width), so that a fit never steps onto a chip that cannot exist for that reason."""
        out = {}
        for fit_key, value in zip(self.keys, values, strict=True):
            value = float(value)
            out[fit_key.key] = max(1, round(value)) if fit_key.whole else value
        if not any(k.whole for k in self.keys):
            return out
        rounded = tuple(out.values())
        if rounded not in self._snapped:
            snapped = out
            if not self._valid(out):
                for fit_key in (k for k in self.keys if k.whole):
                    found = self._nearest_valid(out, fit_key.key)
                    if found is not None:
                        snapped = found
                        break
            self._snapped[rounded] = snapped
        return dict(self._snapped[rounded])

    def _valid(self, applied: dict[str, float]) -> bool:
        try:
            config_from_dict(apply_overrides(self.raw, applied, self.path), self.path)
        except DspSimError:
            return False
        return True

    def _nearest_valid(self, applied: dict[str, float], key: str) -> dict[str, float] | None:
        value = int(applied[key])
        for distance in range(1, max(SNAP_STEPS, value // 10) + 1):
            for candidate in (value + distance, value - distance):
                trial = {**applied, key: candidate}
                if candidate >= 1 and self._valid(trial):
                    return trial
        return None

    def config_for(self, values: Iterable[float]) -> ChipConfig:
        """The validated chip with the keys at ``values``; ConfigError if it cannot exist."""
        changed = apply_overrides(self.raw, self.applied(values), self.path)
        return config_from_dict(changed, self.path)


def memory_map(config: ChipConfig) -> tuple:
    """Everything a call's binding depends on: regions, cores, dtypes, example addresses.

    Two configs with the same memory map bind every call identically, so bound calls are
    reused across the values of keys (bandwidths, cycles) that do not move memory.
    """
    regions = tuple((r.name, r.base_address, r.size_bytes) for r in config.shared_regions)
    return (regions, config.l2, config.cores, config.dtypes, config.example_addresses)


class CallTimer:
    """Times the measured calls on any config of the model, timing only."""

    def __init__(self, measurements: Sequence[Measurement], source: str,
                 kernels=None) -> None:
        self.measurements = list(measurements)
        #: the operators the rows may name (users' own included), as Chip(kernels=) takes
        self.kernels = kernels
        self.source = source
        self._bound: dict[tuple, list[BoundCall]] = {}
        self.simulations = 0  # calls timed, for the report

    def _bind_one(self, chip: Chip, row: Measurement) -> BoundCall:
        cname = chip.resolve(row.operator)
        addresses = place_operands(chip.config, cname, row.length, row.region)
        args = c_arguments(cname.operator, addresses, row.length, dict(row.params))
        kwargs = {"core_mask": row.core_mask} if cname.storage == "shared" else {}
        return chip.bind(row.operator, tuple(args), kwargs, require_written=False)

    def bound_calls(self, config: ChipConfig) -> list[BoundCall]:
        """Every measured call bound on ``config`` (cached per memory map)."""
        key = memory_map(config)
        if key not in self._bound:
            chip = Chip(config, kernels=self.kernels)
            calls = []
            for row in self.measurements:
                try:
                    calls.append(self._bind_one(chip, row))
                except DspSimError as exc:
                    raise MeasurementError(f"{self.source}: line {row.line}: "
                                           f"{config.name} cannot run {row.describe()}: "
                                           f"{exc}") from None
            self._bound[key] = calls
        return self._bound[key]

    def time(self, config: ChipConfig, tiles: Sequence[int | None] | None = None,
             progress: Callable[[int, int], None] | None = None
             ) -> tuple[np.ndarray, list[int | None]]:
        """Predicted cycles of every call, and the tile size (bytes) each shared-storage
        call used (None for private-storage calls).

        ``tiles`` fixes each call's tile size instead of searching for the fastest; where a
        fixed tile no longer fits the chip, the call searches. Raises MeasurementError
        naming the row that ``config`` cannot run.
        """
        chip = Chip(config, kernels=self.kernels)
        cycles = np.empty(len(self.measurements))
        used: list[int | None] = []
        bound_calls = self.bound_calls(config)
        for index, (row, bound) in enumerate(zip(self.measurements, bound_calls, strict=True)):
            fixed = tiles[index] if tiles is not None else None
            try:
                timing = self._prepare(chip, bound, fixed).timing
            except DspSimError as exc:
                raise MeasurementError(f"{self.source}: line {row.line}: {config.name} cannot "
                                       f"run {row.describe()}: {exc}") from None
            cycles[index] = timing.cycles
            used.append(timing.tiling.tile_bytes if timing.tiling is not None else None)
            if progress:
                progress(index + 1, len(self.measurements))
        return cycles, used

    def _prepare(self, chip: Chip, bound: BoundCall, tile_bytes: int | None) -> PreparedCall:
        self.simulations += 1
        if tile_bytes is not None:
            try:
                return PreparedCall(chip, bound, "fast", tile_bytes, record_slices=False)
            except CapacityError:  # the tile no longer fits this chip's L2: search again
                self.simulations += 1
        return PreparedCall(chip, bound, "fast", record_slices=False)


def reported_cycles(cycles: float) -> int:
    """Cycles as a RunResult reports them (rounded up)."""
    return math.ceil(cycles - 1e-9) if cycles else 0
