"""Chip descriptions: load a YAML file, validate every key, build an immutable ChipConfig.

A chip is named either by the name of a file in the packaged ``configs/`` folder
(``ft78ne``, case-insensitive) or by a path to any YAML file, so users can describe
their own chips. Every number carries its unit in its key; every problem is reported
with the file and the key path, e.g. ``my.yaml: memory.ddr.peak_bandwidth_gbps: must
be > 0, got -1``. The keys are listed in :mod:`dspsim.sim.chip.keys`; what they build,
in :mod:`dspsim.sim.chip.model`.
"""
from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping
from importlib import resources
from types import MappingProxyType
from typing import Any

from dspsim.sim.chip.keys import ADDRESS_LIMIT, CHIP_SCHEMA, MAX_CORES, TILING_POLICIES  # noqa: F401
from dspsim.sim.chip.levels import build_levels
from dspsim.sim.chip.model import (  # noqa: F401
    DTYPE_BITS,
    ChipConfig,
    DmaConfig,
    EngineSpec,
    ExampleAddresses,
    Instruction,
    L2Config,
    RegionConfig,
    TilingConfig,
    VectorConfig,
)
from dspsim.sim.chip.schema import Field, validate
from dspsim.sim.chip.yamlfile import parse_yaml, read_yaml_text
from dspsim.sim.engine.dma import dma_model
from dspsim.sim.engine.vector import compute_model
from dspsim.sim.errors import ConfigError


def _instructions(raw: Mapping[str, dict], units: Mapping[str, int],
                  source: str) -> dict[str, Instruction]:
    """Check each instruction's form (unit and occupancy, or an expansion) and build it."""
    instructions = {}
    for name, spec in raw.items():
        path = f"{source}: vector.instructions.{name}"
        issued = spec["unit"] is not None or spec["occupancy_cycles"] is not None
        if spec["expand"] is not None:
            if issued:
                raise ConfigError(f"{path}: give either unit and occupancy_cycles, or expand "
                                  "(the instructions it stands for), not both")
            for part in spec["expand"]:
                if part not in raw:
                    raise ConfigError(
                        f"{path}.expand.{part}: unknown instruction {part!r}; an expansion "
                        f"may use only instructions of vector.instructions ({', '.join(raw)})")
            instructions[name] = Instruction(None, None, MappingProxyType(dict(spec["expand"])))
            continue
        for key in ("unit", "occupancy_cycles"):
            if spec[key] is None:
                raise ConfigError(f"{path}.{key}: missing key (or give expand: the "
                                  "instructions it stands for, when the chip has no unit for it)")
        if spec["unit"] not in units:
            raise ConfigError(f"{path}.unit: unknown unit {spec['unit']!r}; "
                              f"the units of vector.units are {', '.join(units)}")
        instructions[name] = Instruction(spec["unit"], float(spec["occupancy_cycles"]))
    return instructions


def _resolve_expansions(instructions: Mapping[str, Instruction],
                        source: str) -> Mapping[str, Mapping[str, int]]:
    """Each instruction as counts of unit-issued instructions; a cycle of expansions is an
    error naming it."""
    resolved: dict[str, Mapping[str, int]] = {}

    def resolve(name: str, chain: tuple[str, ...]) -> Mapping[str, int]:
        if name in resolved:
            return resolved[name]
        if name in chain:
            loop = " -> ".join(chain[chain.index(name):] + (name,))
            raise ConfigError(f"{source}: vector.instructions.{chain[0]}.expand: the expansion "
                              f"never ends ({loop}); every expansion must come down to "
                              "instructions with a unit")
        spec = instructions[name]
        if spec.expand is None:  # it issues on a unit itself
            counts: dict[str, int] = {name: 1}
        else:
            counts = {}
            for part, per_use in spec.expand.items():
                for issued, n in resolve(part, chain + (name,)).items():
                    counts[issued] = counts.get(issued, 0) + per_use * n
        resolved[name] = MappingProxyType(counts)
        return resolved[name]

    for name in instructions:
        resolve(name, ())
    return MappingProxyType(resolved)


def _build(raw: dict, source: str) -> ChipConfig:
    vec = raw["vector"]
    units = dict(vec["units"])
    instructions = _instructions(vec["instructions"], units, source)
    for required in ("load", "store"):
        if required not in instructions:
            raise ConfigError(f"{source}: vector.instructions: missing instruction {required!r} "
                              "(every kernel loads and stores vectors)")

    for i, dtype in enumerate(raw["dtypes"]):
        if dtype not in DTYPE_BITS:
            raise ConfigError(f"{source}: dtypes[{i}]: unknown dtype {dtype!r}; "
                              f"known dtypes: {', '.join(DTYPE_BITS)}")
        if vec["lane_width_bits"] % DTYPE_BITS[dtype]:
            raise ConfigError(
                f"{source}: vector.lane_width_bits: {vec['lane_width_bits']} is not a multiple of "
                f"{dtype}'s {DTYPE_BITS[dtype]} bits")

    levels, l2 = build_levels(raw["memory"], raw["cores"], source)

    ex = raw["example_addresses"]
    examples = None if ex is None else ExampleAddresses(
        tuple(ex["shared_inputs"]), ex["shared_output"], tuple(ex["private"]))
    dma = _build_dma(raw, source, tuple(level.name for level in levels))
    return ChipConfig(
        name=raw["name"], description=raw["description"] or "", source=source,
        clock_mhz=float(raw["clock_mhz"]), cores=raw["cores"], dtypes=tuple(raw["dtypes"]),
        vector=VectorConfig(vec["lane_width_bits"], float(vec["pipeline_fill_cycles"]),
                            float(vec["loop_overhead_cycles_per_tile"]),
                            MappingProxyType(units), MappingProxyType(instructions),
                            _resolve_expansions(instructions, source),
                            compute_model(vec["model"] or "vliw_issue",
                                          f"{source}: vector.model").name),
        levels=levels, l2=l2,
        dma=dma,
        launch_cycles=float(raw["call"]["launch_cycles"]),
        barrier_cycles=float(raw["call"]["barrier_cycles"]),
        example_addresses=examples,
        tiling=_build_tiling(raw, source),
    )


def _build_tiling(raw: dict, source: str) -> TilingConfig:
    tiling = raw["tiling"]
    if tiling is None:
        return TilingConfig()
    if (tiling["policy"] == "fixed") != (tiling["tile_bytes"] is not None):
        raise ConfigError(f"{source}: tiling.tile_bytes: give it with policy fixed, and only "
                          "then (policy optimal chooses the tile size itself)")
    return TilingConfig(tiling["policy"], tiling["tile_bytes"])


def _build_dma(raw: dict, source: str, regions: tuple[str, ...]) -> DmaConfig:
    """The engines of one pool (per-core engines or transfer controllers, exactly one of
    the two) and the DMA model that says which cores share a pool."""
    dma = raw["dma"]
    default = "per_core_engines" if dma["controllers"] is None else "shared_pool"
    model = dma_model(dma["model"] or default, f"{source}: dma.model")
    wanted = "controllers" if model.engines_from == "controllers" else "engines_per_core"
    given = ("controllers" if dma["controllers"] is not None else
             "engines_per_core" if dma["engines_per_core"] is not None else None)
    if dma["model"] is not None and given is not None and wanted != given:
        raise ConfigError(f"{source}: dma.model: {model.name} takes its engines from "
                          f"dma.{wanted}, but the file gives dma.{given}")
    pool_size = dma["cores_per_pool"]
    if (pool_size is not None) != model.uses_cores_per_pool:
        raise ConfigError(f"{source}: dma.cores_per_pool: "
                          + (f"the {model.name} model does not use it; remove it"
                             if pool_size is not None else
                             f"missing key: the {model.name} model groups cores in pools "
                             f"of this many"))
    per_core = [key for key in ("engines_per_core", "engine_bandwidth_gbps")
                if dma[key] is not None]
    if dma["controllers"] is not None:
        if per_core:
            raise ConfigError(f"{source}: dma.{per_core[0]}: give either engines per core "
                              "(engines_per_core, engine_bandwidth_gbps) or a shared pool "
                              "(controllers), not both")
        engines = []
        for i, group in enumerate(dma["controllers"]):
            path = f"dma.controllers[{i}]"
            gbps = group["bandwidth_gbps"]
            by_bus = (group["width_bits"], group["clock_divider"])
            has_bus = None not in by_bus
            partial_bus = not has_bus and any(v is not None for v in by_bus)
            if partial_bus or (gbps is not None) == has_bus:
                raise ConfigError(
                    f"{source}: {path}: give its bandwidth either as bandwidth_gbps or as "
                    "width_bits and clock_divider (bus width at the chip clock / divider)")
            if gbps is None:
                gbps = group["width_bits"] / 8 * raw["clock_mhz"] / group["clock_divider"] / 1e3
            reach = group["reaches"] or list(regions)
            for j, region in enumerate(reach):
                if region not in regions:
                    raise ConfigError(f"{source}: {path}.reaches[{j}]: unknown region {region!r}; "
                                      f"regions a controller reaches: {', '.join(regions)}")
            engines += [EngineSpec(f"{group['name']}.{k}", float(gbps), frozenset(reach))
                        for k in range(group["count"])]
        for region in regions:
            if not any(region in e.regions for e in engines):
                raise ConfigError(f"{source}: dma.controllers: no controller reaches {region}; "
                                  f"add it to some controller's reaches")
    else:
        missing = [key for key in ("engines_per_core", "engine_bandwidth_gbps")
                   if dma[key] is None]
        if missing:
            raise ConfigError(f"{source}: dma.{missing[0]}: missing key (or describe a shared "
                              "pool under dma.controllers instead)")
        engines = [EngineSpec(f"dma.{k}", float(dma["engine_bandwidth_gbps"]), frozenset(regions))
                   for k in range(dma["engines_per_core"])]
    spec = DmaConfig(tuple(engines), False, float(dma["setup_cycles"]), dma["burst_bytes"],
                     model.name, pool_size)
    shared = any(model.pool_of(spec, core) == model.pool_of(spec, 0)
                 for core in range(1, raw["cores"]))
    return dataclasses.replace(spec, shared=shared)


def config_from_dict(raw: Any, source: str = "<dict>") -> ChipConfig:
    """Validate a parsed chip description and build its ChipConfig."""
    return _build(validate(raw, Field("section", schema=CHIP_SCHEMA), "", source), source)


def packaged_chips() -> dict[str, str]:
    """Map each packaged chip's file stem (lower case) to the YAML file's path."""
    folder = resources.files("dspsim.configs")
    return {entry.name[:-5].lower(): str(entry) for entry in folder.iterdir()
            if entry.name.endswith(".yaml")}


def resolve_chip_path(chip: str | os.PathLike) -> str:
    """Turn a chip name (``ft78ne``) or a path to a YAML file into a readable file path."""
    if not isinstance(chip, (str, os.PathLike)):
        known = ", ".join(sorted(packaged_chips()))
        raise ConfigError(f"chip {chip!r} must be a chip name ({known}) or the path to a YAML "
                          "chip description")
    try:
        text = os.fspath(chip)
    except TypeError:
        raise ConfigError(f"chip {chip!r} is not a name or a path") from None
    if isinstance(text, bytes) or "\0" in text:
        raise ConfigError(f"chip {chip!r} is not a name or a path")
    known = packaged_chips()
    if text.lower() in known:
        return known[text.lower()]
    if os.path.isfile(text):
        return text
    if os.path.exists(text):
        kind = "a directory" if os.path.isdir(text) else "not a regular file"
        raise ConfigError(f"chip file {text!r} is {kind}; give a YAML chip description")
    if text.endswith((".yaml", ".yml")) or os.sep in text:
        raise ConfigError(f"chip file {text!r} does not exist")
    raise ConfigError(f"unknown chip {text!r}; known chips: {', '.join(sorted(known))}, "
                      "or give the path to a YAML chip description")


def load_config_and_text(chip: str | os.PathLike) -> tuple[ChipConfig, str]:
    """Load and validate a chip description by name or path; also return its exact text."""
    path = resolve_chip_path(chip)
    text = read_yaml_text(path)
    source = shown_chip_path(path)
    return config_from_dict(parse_yaml(text, source), source), text


def shown_chip_path(path: str) -> str:
    """How messages name a chip file: a packaged one by its name, not its install path
    (a long site-packages path says nothing the name does not), another as given."""
    for name, packaged in packaged_chips().items():
        if os.path.abspath(packaged) == os.path.abspath(path):
            return f"packaged chip {name} ({os.path.basename(packaged)})"
    return path


def load_config(chip: str | os.PathLike) -> ChipConfig:
    """Load and validate a chip description by name or path."""
    return load_config_and_text(chip)[0]


def read_chip_text(path: str) -> str:
    """The text of a chip file: bounded in size, UTF-8, not binary."""
    return read_yaml_text(path, "a chip description")


def parse_chip_yaml(text: str, source: str) -> Any:
    """Parse a chip file's text with the bounded safe loader."""
    return parse_yaml(text, source, "a chip description")
