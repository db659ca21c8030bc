"""Studies over program files: the file's parameters (``--vary``) and the chip's numbers
(``--set``) as axes, one row per run.

``dspsim sweep --program FILE --vary mask_a=0x1,0x3,0xf --set memory.ddr.efficiency=0.6,0.9``
runs the program for every combination of the file's parameters on the file's chip and on
each what-if variant of it. A run loads the file afresh onto a fresh chip; its row holds
the parameters, cycles, time, every lower bound (the largest, and its share of the actual
cycles), DDR use and each stream's end, and is kept, resumed and analysed by the same
engine as call sweeps (:mod:`dspsim.sweep.driver`, :mod:`dspsim.sweep.store`,
:mod:`dspsim.sweep.whatif`).
"""
from __future__ import annotations

import hashlib
import itertools
import math
import os
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from dspsim import kernels
from dspsim.kernels.loading import kernel_sources
from dspsim.programs.loader import load_program
from dspsim.programs.result import ProgramResult
from dspsim.sim.engine.machine import FIDELITIES
from dspsim.sim.errors import ArgumentError, DspSimError
from dspsim.sweep.chips import ChipSpec, chip_variants, format_overrides, own_values, variant_count
from dspsim.sweep.notes import SkippedNotes
from dspsim.sweep.study import Plan, Schema

#: The lower bounds a program result names, and the row column of each.
LOWER_BOUNDS = {"DDR": "lower_bound_ddr", "shared SRAM": "lower_bound_shared_sram",
                "calls on the busiest core": "lower_bound_busiest_core",
                "longest dependency chain": "lower_bound_dependency_chain"}

#: Columns of a program study's rows.csv, before its parameters and streams (see
#: :func:`program_columns`).
PROGRAM_COLUMNS = (
    "program", "chip", "parameters", "overrides", "cycles", "microseconds", "bound",
    "bound_cycles", "bound_share", *LOWER_BOUNDS.values(), "ddr_bytes", "achieved_gbps",
    "ddr_utilisation", "ddr_achievable_gbps", "clock_mhz", "calls", "streams", "cores",
    "critical_path", "fidelity", "numerics", "warnings", "host_seconds", "given_values",
    "config_digest", "base_digest", "program_digest", "key",
)
#: What a stored program row must hold for resuming and plotting to use it.
PROGRAM_REQUIRED = {"key": str, "chip": str, "program": str, "cycles": int,
                    "config_digest": str}


def program_columns(parameters: list[str], streams: list[str]) -> tuple[str, ...]:
    """The columns of a program study: the fixed ones with ``param.NAME`` per varied
    parameter after ``parameters`` and ``end.STREAM`` per stream after ``streams``."""
    at = PROGRAM_COLUMNS.index("overrides")
    return (PROGRAM_COLUMNS[:at] + tuple(f"param.{p}" for p in parameters)
            + PROGRAM_COLUMNS[at:] + tuple(f"end.{s}" for s in streams))


def shown_value(name: str, value: Any) -> str:
    """A parameter as users write it: masks in hex, other numbers exactly (a float's
    shortest form that reads back the same, so that two values never print alike)."""
    if isinstance(value, int) and "mask" in name:
        return hex(value)
    return repr(value) if isinstance(value, float) else str(value)


def format_parameters(parameters) -> str:
    """Parameters as ``mask_a=0xf,n=1024``."""
    return ",".join(f"{name}={shown_value(name, value)}" for name, value in parameters)


@dataclass
class ProgramSweepSpec:
    """What to study of a program file: values of its parameters (``vary``) and of its
    chip's numbers (``chip_sets``); every combination runs."""

    program: str
    vary: dict[str, list] = field(default_factory=dict)
    chip_sets: dict[str, list[float]] = field(default_factory=dict)
    numerics: bool = True
    fidelity: str = "fast"
    #: users' own operators besides those the file's ``kernels:`` names: kernel files
    #: (paths or KernelSource), as ``Chip(kernels=...)`` takes them
    kernels: tuple = ()


@dataclass(frozen=True)
class ProgramRun:
    """One run of a program study: the file, its parameters, the chip it runs on."""

    chip: ChipSpec
    program: str  # the file's path
    program_digest: str  # of the file's text: an edited file means new rows
    parameters: tuple[tuple[str, Any], ...]
    numerics: bool = True
    fidelity: str = "fast"
    #: users' kernel files given besides the file's own (their text), so that any worker
    #: can rebuild their operators
    kernels: tuple[kernels.KernelSource, ...] = ()
    #: of every kernel file the run's operators come from (the file's ``kernels:`` and
    #: those given): an edited kernel file means new rows
    kernels_digest: str = ""

    @property
    def key(self) -> str:
        """Identity of the run in the row store (numerics do not change timing)."""
        params = ",".join(f"{k}={v!r}" for k, v in self.parameters)
        own = f"|kernels={self.kernels_digest}" if self.kernels_digest else ""
        return (f"program|{os.path.basename(self.program)}|{self.program_digest}|"
                f"{self.chip.name}|{self.chip.digest}|{params}|fidelity={self.fidelity}{own}")

    def baseline(self) -> None:
        """Program runs are compared with the chip as given, which the plan holds."""
        return None


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:12]


def _kernels_digest(found: kernels.KernelSet) -> str:
    """Of the kernel files ``found``'s own operators were read from ("" if none)."""
    return _digest(",".join(source.digest for source in found.sources)) if found.sources \
        else ""


def parse_vary(pairs: list[str], parse_value) -> dict[str, list]:
    """``NAME=V1,V2`` options as {name: [values]}, in the order given."""
    axes: dict[str, list] = {}
    for pair in pairs:
        name, sep, values = pair.partition("=")
        name = name.strip()
        if not sep or not name or not values.strip():
            raise ArgumentError(f"--vary {pair!r} must be NAME=V1,V2,..., e.g. "
                                f"--vary mask_a=0x1,0x3,0xf")
        if name in axes:
            raise ArgumentError(f"--vary {name} is given twice; list all its values once")
        axes[name] = list(dict.fromkeys(parse_value(v.strip())
                                        for v in values.split(",") if v.strip()))
    return axes


def plan_program(spec: ProgramSweepSpec) -> Plan:
    """The runs of a program study, counted now and built as they are asked for. The file
    is loaded once here, so that a broken file or an unknown parameter fails before any
    folder is made."""
    if not spec.vary and not spec.chip_sets:
        raise ArgumentError("--program needs --vary NAME=V1,V2,... over a parameter of the "
                            "file, or --set KEY=V1,V2,... over a number of its chip")
    if spec.fidelity not in FIDELITIES:
        raise ArgumentError(f"unknown fidelity {spec.fidelity!r}; use one of "
                            f"{', '.join(FIDELITIES)}")
    for name, values in spec.vary.items():
        if not values:
            raise ArgumentError(f"--vary {name}: give at least one value")
    for key, values in spec.chip_sets.items():
        if not values:
            raise ArgumentError(f"--set {key}: give at least one value")
    given = kernel_sources(list(spec.kernels))  # read once: their text travels with runs
    # a broken file fails here
    loaded = load_program(spec.program, kernels=list(given) or None)
    unknown = [name for name in spec.vary if name not in loaded.parameters]
    if unknown:
        known = ", ".join(loaded.parameters) or "none"
        raise ArgumentError(f"--vary {unknown[0]}: {unknown[0]!r} is not in the file's "
                            f"parameters ({known}) of {spec.program}")
    # the text the program's chip was read from (its source is a name for messages)
    text = loaded.chip.description_yaml
    assert text is not None, "a program file's chip is always read from a file"
    chip = ChipSpec.from_text(text, loaded.chip.config.source)
    own_values(chip, spec.chip_sets)  # a key the chip lacks fails here
    digest = _digest(loaded.text)
    sizes = [len(v) for v in spec.vary.values()]
    count = variant_count(spec.chip_sets) * math.prod(sizes)
    shape = " × ".join([f"{' × '.join(f'{len(v):,}' for v in spec.vary.values())} "
                        f"parameter values"] * bool(sizes)
                       + [f"{variant_count(spec.chip_sets):,} chips (as given and what-if "
                          f"variants)"] * bool(spec.chip_sets))
    columns = program_columns(list(spec.vary), [s.name for s in loaded.program.streams])
    own = (given, _kernels_digest(loaded.chip.kernels))
    return Plan(Schema("program", columns, PROGRAM_REQUIRED), count, 0, shape, [],
                lambda notes: _program_runs(spec, chip, digest, own, notes))


def _program_runs(spec: ProgramSweepSpec, chip: ChipSpec, digest: str, own: tuple,
                  notes: list[str]) -> Iterator[ProgramRun]:
    skipped = SkippedNotes(notes)
    for variant in chip_variants(chip, spec.chip_sets, skipped):
        for values in itertools.product(*spec.vary.values()):
            yield ProgramRun(variant, spec.program, digest,
                             tuple(zip(spec.vary, values, strict=True)),
                             spec.numerics, spec.fidelity, *own)
    skipped.summary()


def execute_program(run: ProgramRun, _baseline_cycles: int | None = None) -> dict[str, Any]:
    """Run the program once; ``{"row": {...}}``, or ``{"note": ...}`` if the chip or the
    file refused this combination (a mask selecting no core, buffers that no longer fit)."""
    started = time.perf_counter()
    label = f"{run.chip.name} {format_parameters(run.parameters) or 'as given'}"
    if run.chip.overrides:
        label += f" with {format_overrides(run.chip.overrides)}"
    try:
        loaded = load_program(run.program, dict(run.parameters),
                              kernels=list(run.kernels) or None, chip=run.chip.config())
        if _digest(loaded.text) != run.program_digest:
            raise ArgumentError(f"{run.program} changed while the study ran; run the same "
                                f"command again to study the file as it is now")
        if _kernels_digest(loaded.chip.kernels) != run.kernels_digest:
            raise ArgumentError(f"a kernel file of {run.program} changed while the study "
                                f"ran; run the same command again to study it as it is now")
        result = loaded.run(numerics=run.numerics, fidelity=run.fidelity)
    except DspSimError as exc:
        return {"note": f"{label}: {exc}"}
    row = program_row(run, result)
    row["host_seconds"] = round(time.perf_counter() - started, 4)
    return {"row": row}


def program_row(run: ProgramRun, result: ProgramResult) -> dict[str, Any]:
    """One run of a program study as a flat row."""
    bound_cycles = result.bounds.get(result.bound)
    row: dict[str, Any] = {
        "study": "program", "program": os.path.basename(run.program), "chip": result.chip,
        "parameters": format_parameters(run.parameters),
        **{f"param.{k}": v for k, v in run.parameters},
        "cycles": result.cycles, "microseconds": result.microseconds,
        "bound": result.bound, "bound_cycles": bound_cycles,
        "bound_share": bound_cycles / result.cycles if result.cycles and bound_cycles else None,
        **{column: result.bounds.get(name) for name, column in LOWER_BOUNDS.items()},
        "ddr_bytes": result.ddr["bytes"], "achieved_gbps": result.ddr["achieved_gbps"],
        "ddr_utilisation": result.ddr["utilisation"],
        "ddr_achievable_gbps": result.ddr["achievable_gbps"], "clock_mhz": result.clock_mhz,
        "calls": len(result.calls), "streams": len(result.streams),
        "cores": len({core for c in result.calls for core in c.cores}),
        "critical_path": " -> ".join(f"{p['call']}:{p['operator']}"
                                     for p in result.critical_path),
        "fidelity": result.fidelity, "numerics": run.numerics,
        "warnings": "; ".join(result.warnings),
        "overrides": format_overrides(run.chip.overrides),
        "given_values": format_overrides(run.chip.given),
        "config_digest": run.chip.digest, "base_digest": run.chip.base_digest or run.chip.digest,
        "program_digest": run.program_digest, "key": run.key,
    }
    for stream in result.streams:
        row[f"end.{stream}"] = max((c.end_cycle for c in result.calls if c.stream == stream),
                                   default=0.0)
    return row
