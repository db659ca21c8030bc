"""Chip descriptions: load a YAML file, validate every key, build an immutable ChipConfig.

A chip is named either by the name of a file in the packaged ``configs/`` folder
(``ft78ne``, case-insensitive) or by a path to any YAML file, so users can describe
their own chips. Every number carries its unit in its key; every problem is reported
with the file and the key path, e.g. ``my.yaml: memory.ddr.peak_bandwidth_gbps: must
be > 0, got -1``.
"""
from __future__ import annotations

import math
import os
from dataclasses import dataclass
from importlib import resources
from types import MappingProxyType
from typing import Any, Callable, Mapping

import yaml

from dspsim.sim.errors import ConfigError

#: Width in bits of every data type a chip may list under ``dtypes``.
DTYPE_BITS = MappingProxyType({"fp32": 32, "fp16": 16, "bf16": 16})

ADDRESS_LIMIT = 1 << 32
#: How a chip's operator library picks tile sizes (see :mod:`dspsim.sim.tiling`).
TILING_POLICIES = ("optimal", "fixed")
#: More cores than a chip description may have (core masks and per-core tables are walked
#: core by core).
MAX_CORES = 4096
#: Magnitudes a number in a chip file may have (or be 0): beyond them no chip exists, and
#: products such as bytes per cycle (GB/s over MHz) would overflow or reach zero.
NUMBER_MAGNITUDES = (1e-6, 1e12)
#: Bounds on a chip file as text and as parsed YAML: a chip description is a few KiB of
#: a few hundred nodes; anything far beyond is a wrong file or an alias bomb.
MAX_FILE_BYTES = 1 << 20
MAX_YAML_DEPTH = 32
MAX_YAML_NODES = 100_000


# ----------------------------------------------------------------------------- schema
class _Field:
    """What one key must hold: a kind, and optional constraints."""

    def __init__(self, kind: str, *, optional: bool = False, positive: bool = False,
                 non_negative: bool = False, check: Callable[[Any], str | None] | None = None,
                 schema: Mapping[str, "_Field"] | None = None, item: "_Field | None" = None):
        self.kind = kind
        self.optional = optional
        self.positive = positive
        self.non_negative = non_negative
        self.check = check
        self.schema = schema
        self.item = item


def _unit_fraction(value: float) -> str | None:
    return None if 0 < value <= 1 else f"must be in (0, 1], got {value}"


def _address(value: int) -> str | None:
    return None if 0 <= value < ADDRESS_LIMIT else f"must be a 32-bit address, got {value:#x}"


#: An instruction either issues on a functional unit for a number of cycles, or, on a chip
#: with no unit for it, stands for a sequence of other instructions (``expand``: counts of
#: each per use). Which of the two forms is given is checked in :func:`_build`.
_INSTRUCTION = {
    "unit": _Field("str", optional=True),
    "occupancy_cycles": _Field("number", optional=True, positive=True),
    "expand": _Field("mapping", optional=True, item=_Field("int", positive=True)),
}

#: One group of identical transfer controllers in a shared DMA pool. Its bandwidth is
#: either given, or follows from its data-bus width and its clock (the chip's clock divided
#: by ``clock_divider``), as data manuals describe them.
_CONTROLLER = {
    "name": _Field("str"),
    "count": _Field("int", positive=True, check=lambda v: None if v <= MAX_CORES else
                    f"must be at most {MAX_CORES}, got {v}"),
    "bandwidth_gbps": _Field("number", optional=True, positive=True),
    "width_bits": _Field("int", optional=True, positive=True,
                         check=lambda v: None if v % 8 == 0 else f"must be whole bytes, got {v}"),
    "clock_divider": _Field("number", optional=True, positive=True),
    "reaches": _Field("list", optional=True, item=_Field("str")),
}

_SCHEMA: dict[str, _Field] = {
    "name": _Field("str"),
    "description": _Field("str", optional=True),
    "clock_mhz": _Field("number", positive=True),
    "cores": _Field("int", positive=True, check=lambda v: None if v <= MAX_CORES else
                    f"must be at most {MAX_CORES}, got {v}"),
    "dtypes": _Field("list", item=_Field("str")),
    "vector": _Field("section", schema={
        "lane_width_bits": _Field("int", positive=True),
        "pipeline_fill_cycles": _Field("number", non_negative=True),
        "loop_overhead_cycles_per_tile": _Field("number", non_negative=True),
        "units": _Field("mapping", item=_Field("int", positive=True)),
        "instructions": _Field("mapping", item=_Field("section", schema=_INSTRUCTION)),
    }),
    "memory": _Field("section", schema={
        "ddr": _Field("section", schema={
            "base_address": _Field("int", check=_address),
            "size_mib": _Field("int", positive=True),
            "peak_bandwidth_gbps": _Field("number", positive=True),
            "efficiency": _Field("number", check=_unit_fraction),
        }),
        "shared_sram": _Field("section", schema={
            "base_address": _Field("int", check=_address),
            "size_kib": _Field("int", positive=True),
            "bandwidth_gbps": _Field("number", positive=True),
        }),
        "l2": _Field("section", schema={
            "base_address": _Field("int", check=_address),
            "core_stride_bytes": _Field("int", optional=True, non_negative=True),
            "local_alias_address": _Field("int", optional=True, check=_address),
            "size_kib": _Field("int", positive=True),
            "load_store_bytes_per_cycle": _Field("number", positive=True),
            "reserve_kib": _Field("int", non_negative=True),
        }),
    }),
    "dma": _Field("section", schema={
        # either engines private to each core ...
        "engines_per_core": _Field("int", optional=True, positive=True),
        "engine_bandwidth_gbps": _Field("number", optional=True, positive=True),
        # ... or a pool of transfer controllers shared by all cores
        "controllers": _Field("list", optional=True, item=_Field("section", schema=_CONTROLLER)),
        "setup_cycles": _Field("number", non_negative=True),
        "burst_bytes": _Field("int", positive=True),
    }),
    "tiling": _Field("section", optional=True, schema={
        "policy": _Field("str", check=lambda v: None if v in TILING_POLICIES else
                         f"must be one of {', '.join(TILING_POLICIES)}, got {v!r}"),
        "tile_bytes": _Field("int", optional=True, positive=True),
    }),
    "call": _Field("section", schema={
        "launch_cycles": _Field("number", non_negative=True),
        "barrier_cycles": _Field("number", non_negative=True),
    }),
    "example_addresses": _Field("section", optional=True, schema={
        "shared_inputs": _Field("list", item=_Field("int", check=_address)),
        "shared_output": _Field("int", check=_address),
        "private": _Field("list", item=_Field("int", check=_address)),
    }),
}


def schema_kind(parts: tuple[str, ...]) -> str | None:
    """What the schema says the value at a key path holds: ``"int"`` (a whole number),
    ``"number"``, ``"str"``, a container kind, or None for a path the schema does not know.

    List positions and the names under a free mapping (``vector.units.alu``) are followed
    to the kind of their items.
    """
    field: _Field | None = _Field("section", schema=_SCHEMA)
    for part in parts:
        if field is None:
            return None
        if field.kind == "section":
            field = field.schema.get(part)
        elif field.kind in ("mapping", "list"):
            field = field.item if field.kind == "mapping" or part.isdigit() else None
        else:
            return None
    return field.kind if field is not None else None


def _type_name(value: Any) -> str:
    return type(value).__name__


def _validate(node: Any, field: _Field, path: str, source: str) -> Any:
    """Check ``node`` against ``field``; return it with sections converted to dicts."""

    def fail(message: str) -> ConfigError:
        return ConfigError(f"{source}: {path or '<top level>'}: {message}")

    kind = field.kind
    if kind == "section":
        if not isinstance(node, dict):
            raise fail(f"must be a mapping of keys, got {_type_name(node)}")
        unknown = sorted(set(node) - set(field.schema))
        if unknown:
            raise fail(f"unknown key {unknown[0]!r}; allowed keys: {', '.join(field.schema)}")
        out = {}
        for key, sub in field.schema.items():
            sub_path = f"{path}.{key}" if path else key
            if node.get(key) is None:
                if key in node and not sub.optional:
                    raise ConfigError(f"{source}: {sub_path}: must not be empty")
                if not sub.optional:
                    raise ConfigError(f"{source}: {sub_path}: missing key")
                out[key] = None
                continue
            out[key] = _validate(node[key], sub, sub_path, source)
        return out
    if kind == "mapping":
        if not isinstance(node, dict) or not node:
            raise fail(f"must be a non-empty mapping, got {node!r}")
        return {str(k): _validate(v, field.item, f"{path}.{k}", source) for k, v in node.items()}
    if kind == "list":
        if not isinstance(node, list) or not node:
            raise fail(f"must be a non-empty list, got {node!r}")
        return [_validate(v, field.item, f"{path}[{i}]", source) for i, v in enumerate(node)]
    if kind == "str":
        if not isinstance(node, str) or not node:
            raise fail(f"must be a non-empty string, got {node!r}")
        problem = field.check(node) if field.check is not None else None
        if problem:
            raise fail(problem)
        return node
    # numbers: YAML booleans are ints to Python, but never a valid number here
    if isinstance(node, bool) or not isinstance(node, (int, float)):
        raise fail(f"must be a {'whole number' if kind == 'int' else 'number'}, got {node!r}")
    if kind == "int" and not isinstance(node, int):
        raise fail(f"must be a whole number, got {node!r}")
    if isinstance(node, float) and not math.isfinite(node):
        raise fail(f"must be finite, got {node!r}")
    if node and not NUMBER_MAGNITUDES[0] <= abs(node) <= NUMBER_MAGNITUDES[1]:
        shown = f"{node:.6g}" if abs(node) < 1e300 else f"a number of {len(str(abs(node)))} digits"
        raise fail(f"must be 0 or of magnitude {NUMBER_MAGNITUDES[0]:g} to "
                   f"{NUMBER_MAGNITUDES[1]:g}, got {shown}")
    if field.positive and node <= 0:
        raise fail(f"must be > 0, got {node}")
    if field.non_negative and node < 0:
        raise fail(f"must be >= 0, got {node}")
    if field.check is not None:
        problem = field.check(node)
        if problem:
            raise fail(problem)
    return node


# ----------------------------------------------------------------------------- model
@dataclass(frozen=True)
class Instruction:
    """One vector instruction: the unit it issues on and for how many cycles, or the
    instructions it expands to when the chip has no unit for it."""

    unit: str | None
    occupancy_cycles: float | None
    expand: Mapping[str, int] | None = None  # instruction -> count, for software sequences

    @property
    def issues(self) -> bool:
        """Whether the instruction occupies a unit itself (rather than expanding)."""
        return self.expand is None


@dataclass(frozen=True)
class VectorConfig:
    lane_width_bits: int
    pipeline_fill_cycles: float
    loop_overhead_cycles_per_tile: float
    units: Mapping[str, int]
    instructions: Mapping[str, Instruction]
    #: every instruction as the counts of unit-issued instructions it finally comes to
    #: (an issued instruction maps to itself once), nested expansions resolved
    issued: Mapping[str, Mapping[str, int]]

    def expand(self, mix: Mapping[str, int]) -> dict[str, int]:
        """The unit-issued instructions that ``mix`` comes to, expansions resolved.

        Every name in ``mix`` must be one of :attr:`instructions`.
        """
        out: dict[str, int] = {}
        for name, count in mix.items():
            for issued, per_use in self.issued[name].items():
                out[issued] = out.get(issued, 0) + count * per_use
        return out


@dataclass(frozen=True)
class RegionConfig:
    """A shared memory region (DDR or shared SRAM)."""

    name: str
    base_address: int
    size_bytes: int
    bandwidth_gbps: float  # what the link sustains (achievable, not peak)
    peak_bandwidth_gbps: float

    @property
    def end_address(self) -> int:
        return self.base_address + self.size_bytes


@dataclass(frozen=True)
class L2Config:
    base_address: int
    core_stride_bytes: int  # 0: every core sees only its own L2, at base_address
    local_alias_address: int | None
    size_bytes: int
    load_store_bytes_per_cycle: float
    reserve_bytes: int


@dataclass(frozen=True)
class EngineSpec:
    """One DMA engine (or transfer controller): its name, bandwidth and reach."""

    name: str
    bandwidth_gbps: float
    regions: frozenset[str]  # the shared regions (ddr, shared_sram) it moves data to and from


@dataclass(frozen=True)
class DmaConfig:
    """How the cores move tiles: engines of their own, or a pool they all share.

    The two are the same interface to the model: a transfer takes a free engine that
    reaches its region (from its core's engines, or from the shared pool), pays
    ``setup_cycles`` on it, then moves its bytes at most at the engine's bandwidth.
    """

    engines: tuple[EngineSpec, ...]  # per core (shared=False) or of the whole chip's pool
    shared: bool
    setup_cycles: float
    burst_bytes: int

    def describe(self) -> str:
        """One line: '2 per core x 12.8 GB/s' or the pool's controller groups."""
        groups: dict[tuple[str, float], int] = {}
        for engine in self.engines:
            key = (engine.name.rsplit(".", 1)[0], engine.bandwidth_gbps)
            groups[key] = groups.get(key, 0) + 1
        parts = [f"{count} x {gbps:.4g} GB/s" + (f" ({name})" if self.shared else "")
                 for (name, gbps), count in groups.items()]
        return (f"shared pool: {', '.join(parts)}" if self.shared
                else f"{', '.join(parts)} per core")


@dataclass(frozen=True)
class TilingConfig:
    """``optimal``: the tile size that minimises the call's time; ``fixed``: ``tile_bytes``."""

    policy: str = "optimal"
    tile_bytes: int | None = None


@dataclass(frozen=True)
class ExampleAddresses:
    shared_inputs: tuple[int, ...]
    shared_output: int
    private: tuple[int, ...]


@dataclass(frozen=True)
class ChipConfig:
    """A validated chip description. Build it with :func:`load_config`."""

    name: str
    description: str
    source: str
    clock_mhz: float
    cores: int
    dtypes: tuple[str, ...]
    vector: VectorConfig
    ddr: RegionConfig
    shared_sram: RegionConfig
    l2: L2Config
    dma: DmaConfig
    launch_cycles: float
    barrier_cycles: float
    example_addresses: ExampleAddresses | None
    tiling: TilingConfig = TilingConfig()

    def bytes_per_cycle(self, gbps: float) -> float:
        """Convert a bandwidth in GB/s (1e9 bytes/s) to bytes per core cycle."""
        return gbps * 1e3 / self.clock_mhz

    def lanes(self, dtype: str) -> int:
        """Elements of ``dtype`` in one vector register."""
        return self.vector.lane_width_bits // DTYPE_BITS[dtype]

    @property
    def shared_regions(self) -> tuple[RegionConfig, ...]:
        return (self.ddr, self.shared_sram)


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
        if spec.issues:
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

    mem = raw["memory"]
    ddr = RegionConfig("ddr", mem["ddr"]["base_address"], mem["ddr"]["size_mib"] << 20,
                       mem["ddr"]["peak_bandwidth_gbps"] * mem["ddr"]["efficiency"],
                       mem["ddr"]["peak_bandwidth_gbps"])
    sram = RegionConfig("shared_sram", mem["shared_sram"]["base_address"],
                        mem["shared_sram"]["size_kib"] << 10, mem["shared_sram"]["bandwidth_gbps"],
                        mem["shared_sram"]["bandwidth_gbps"])
    l2raw = mem["l2"]
    l2 = L2Config(l2raw["base_address"], l2raw["core_stride_bytes"] or 0,
                  l2raw["local_alias_address"], l2raw["size_kib"] << 10,
                  float(l2raw["load_store_bytes_per_cycle"]), l2raw["reserve_kib"] << 10)
    if l2.reserve_bytes >= l2.size_bytes:
        raise ConfigError(f"{source}: memory.l2.reserve_kib: {l2raw['reserve_kib']} leaves no room "
                          f"for buffers in a {l2raw['size_kib']} KiB L2")
    if l2.core_stride_bytes and l2.core_stride_bytes < l2.size_bytes:
        raise ConfigError(f"{source}: memory.l2.core_stride_bytes: {l2.core_stride_bytes:#x} is "
                          f"smaller than the L2 size {l2.size_bytes:#x}: the cores' L2 would overlap")

    # every address window, to check for overlaps and the 32-bit limit
    windows = [("memory.ddr", ddr.base_address, ddr.size_bytes),
               ("memory.shared_sram", sram.base_address, sram.size_bytes)]
    l2_copies = raw["cores"] if l2.core_stride_bytes else 1
    for core in range(l2_copies):
        windows.append((f"memory.l2 (core {core})",
                        l2.base_address + core * l2.core_stride_bytes, l2.size_bytes))
    if l2.local_alias_address is not None:
        windows.append(("memory.l2.local_alias_address", l2.local_alias_address, l2.size_bytes))
    for label, base, size in windows:
        if base + size > ADDRESS_LIMIT:
            raise ConfigError(f"{source}: {label}: ends at {base + size:#x}, past the 32-bit "
                              f"address space; lower its base address or its size")
    ordered = sorted(windows, key=lambda w: w[1])
    for (la, ba, sa), (lb, bb, _) in zip(ordered, ordered[1:]):
        if ba + sa > bb:
            raise ConfigError(f"{source}: {la} [{ba:#x}, {ba + sa:#x}) overlaps {lb} starting at "
                              f"{bb:#x}; move one of them")

    ex = raw["example_addresses"]
    examples = None if ex is None else ExampleAddresses(
        tuple(ex["shared_inputs"]), ex["shared_output"], tuple(ex["private"]))
    dma = _build_dma(raw, source)
    return ChipConfig(
        name=raw["name"], description=raw["description"] or "", source=source,
        clock_mhz=float(raw["clock_mhz"]), cores=raw["cores"], dtypes=tuple(raw["dtypes"]),
        vector=VectorConfig(vec["lane_width_bits"], float(vec["pipeline_fill_cycles"]),
                            float(vec["loop_overhead_cycles_per_tile"]),
                            MappingProxyType(units), MappingProxyType(instructions),
                            _resolve_expansions(instructions, source)),
        ddr=ddr, shared_sram=sram, l2=l2,
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


def _build_dma(raw: dict, source: str) -> DmaConfig:
    """Per-core engines or a shared controller pool, exactly one of the two."""
    dma = raw["dma"]
    regions = ("ddr", "shared_sram")
    per_core = [key for key in ("engines_per_core", "engine_bandwidth_gbps") if dma[key] is not None]
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
        shared = True
    else:
        missing = [key for key in ("engines_per_core", "engine_bandwidth_gbps")
                   if dma[key] is None]
        if missing:
            raise ConfigError(f"{source}: dma.{missing[0]}: missing key (or describe a shared "
                              "pool under dma.controllers instead)")
        engines = [EngineSpec(f"dma.{k}", float(dma["engine_bandwidth_gbps"]), frozenset(regions))
                   for k in range(dma["engines_per_core"])]
        shared = False
    return DmaConfig(tuple(engines), shared, float(dma["setup_cycles"]), dma["burst_bytes"])


def config_from_dict(raw: Any, source: str = "<dict>") -> ChipConfig:
    """Validate a parsed chip description and build its ChipConfig."""
    return _build(_validate(raw, _Field("section", schema=_SCHEMA), "", source), source)


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


class _ChipLoader(yaml.SafeLoader):
    """YAML's safe loader, bounded: nesting depth while parsing, and the size of the
    document once aliases are expanded (an alias bomb is a few lines of text that expand
    to billions of nodes); duplicate keys are refused rather than silently dropped."""

    def __init__(self, stream) -> None:
        super().__init__(stream)
        self._depth = 0

    def compose_node(self, parent, index):  # noqa: D102
        self._depth += 1
        try:
            if self._depth > MAX_YAML_DEPTH:
                raise _YamlLimit(f"nested more than {MAX_YAML_DEPTH} levels deep")
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1

    def compose_document(self):  # noqa: D102
        node = super().compose_document()
        _check_expanded(node)
        return node


class _YamlLimit(Exception):
    """A chip file over one of the bounds of :class:`_ChipLoader`."""


def _check_expanded(root) -> None:
    """Count the document's nodes with every alias expanded; refuse cycles and duplicates."""
    sizes: dict[int, int] = {}
    on_path: set[int] = set()
    stack = [(root, False)]
    while stack:
        node, children_done = stack.pop()
        key = id(node)
        if children_done:
            on_path.discard(key)
            sizes[key] = 1 + sum(sizes[id(c)] for c in _children(node))
            if sizes[key] > MAX_YAML_NODES:
                raise _YamlLimit(f"expands to more than {MAX_YAML_NODES:,} values once its "
                                 f"aliases are expanded")
            continue
        if key in sizes:
            continue
        if key in on_path:
            raise _YamlLimit("an alias refers to a value that contains it")
        if isinstance(node, yaml.MappingNode):
            seen = set()
            for item_key, _ in node.value:
                if isinstance(item_key, yaml.ScalarNode):
                    if item_key.value in seen:
                        line = item_key.start_mark.line + 1
                        raise _YamlLimit(f"line {line}: duplicate key {item_key.value!r}")
                    seen.add(item_key.value)
        on_path.add(key)
        stack.append((node, True))
        stack.extend((child, False) for child in _children(node) if id(child) not in sizes)


def _children(node) -> list:
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    if isinstance(node, yaml.MappingNode):
        return [part for pair in node.value for part in pair]
    return []


def read_chip_text(path: str) -> str:
    """The text of a chip file: bounded in size, UTF-8, not binary."""
    try:
        with open(path, "rb") as handle:
            data = handle.read(MAX_FILE_BYTES + 1)
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read: {exc.strerror}") from None
    if len(data) > MAX_FILE_BYTES:
        raise ConfigError(f"{path}: larger than {MAX_FILE_BYTES >> 10} KiB; a chip description "
                          f"is a small YAML file")
    if b"\0" in data:
        raise ConfigError(f"{path}: a binary file, not a YAML chip description")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{path}: not UTF-8 text (byte {exc.start}); a chip description "
                          f"is a YAML text file") from None


def parse_chip_yaml(text: str, source: str) -> Any:
    """Parse a chip file's text with the bounded safe loader."""
    loader = _ChipLoader(text)
    try:
        return loader.get_single_data()
    except _YamlLimit as exc:
        raise ConfigError(f"{source}: {exc}; a chip description is a small YAML file") from None
    except yaml.YAMLError as exc:
        raise ConfigError(f"{source}: not valid YAML: {exc}") from None
    except RecursionError:
        raise ConfigError(f"{source}: nested too deeply; a chip description is a small YAML "
                          f"file") from None
    finally:
        loader.dispose()


def load_config_and_text(chip: str | os.PathLike) -> tuple[ChipConfig, str]:
    """Load and validate a chip description by name or path; also return its exact text."""
    path = resolve_chip_path(chip)
    text = read_chip_text(path)
    return config_from_dict(parse_chip_yaml(text, path), path), text


def load_config(chip: str | os.PathLike) -> ChipConfig:
    """Load and validate a chip description by name or path."""
    return load_config_and_text(chip)[0]
