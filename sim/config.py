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
#: More cores than a chip description may have (core masks and per-core tables are walked
#: core by core).
MAX_CORES = 4096


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


_INSTRUCTION = {
    "unit": _Field("str"),
    "occupancy_cycles": _Field("number", positive=True),
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
        "engines_per_core": _Field("int", check=lambda v: None if v >= 2 else
                                   f"must be >= 2 (one for loads, one for stores), got {v}"),
        "engine_bandwidth_gbps": _Field("number", positive=True),
        "setup_cycles": _Field("number", non_negative=True),
        "burst_bytes": _Field("int", positive=True),
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
        return node
    # numbers: YAML booleans are ints to Python, but never a valid number here
    if isinstance(node, bool) or not isinstance(node, (int, float)):
        raise fail(f"must be a {'whole number' if kind == 'int' else 'number'}, got {node!r}")
    if kind == "int" and not isinstance(node, int):
        raise fail(f"must be a whole number, got {node!r}")
    if isinstance(node, float) and not math.isfinite(node):
        raise fail(f"must be finite, got {node!r}")
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
    """One vector instruction: the functional unit it issues on and for how many cycles."""

    unit: str
    occupancy_cycles: float


@dataclass(frozen=True)
class VectorConfig:
    lane_width_bits: int
    pipeline_fill_cycles: float
    loop_overhead_cycles_per_tile: float
    units: Mapping[str, int]
    instructions: Mapping[str, Instruction]


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
class DmaConfig:
    engines_per_core: int
    engine_bandwidth_gbps: float
    setup_cycles: float
    burst_bytes: int

    @property
    def load_engines(self) -> int:
        """Engines that move operands into L2; the rest store results back."""
        return self.engines_per_core - self.engines_per_core // 2

    @property
    def store_engines(self) -> int:
        return self.engines_per_core // 2


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

    def bytes_per_cycle(self, gbps: float) -> float:
        """Convert a bandwidth in GB/s (1e9 bytes/s) to bytes per core cycle."""
        return gbps * 1e3 / self.clock_mhz

    def lanes(self, dtype: str) -> int:
        """Elements of ``dtype`` in one vector register."""
        return self.vector.lane_width_bits // DTYPE_BITS[dtype]

    @property
    def shared_regions(self) -> tuple[RegionConfig, ...]:
        return (self.ddr, self.shared_sram)


def _build(raw: dict, source: str) -> ChipConfig:
    vec = raw["vector"]
    units = dict(vec["units"])
    instructions = {}
    for name, spec in vec["instructions"].items():
        if spec["unit"] not in units:
            raise ConfigError(
                f"{source}: vector.instructions.{name}.unit: unknown unit {spec['unit']!r}; "
                f"the units of vector.units are {', '.join(units)}")
        instructions[name] = Instruction(spec["unit"], float(spec["occupancy_cycles"]))
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
    dma = raw["dma"]
    return ChipConfig(
        name=raw["name"], description=raw["description"] or "", source=source,
        clock_mhz=float(raw["clock_mhz"]), cores=raw["cores"], dtypes=tuple(raw["dtypes"]),
        vector=VectorConfig(vec["lane_width_bits"], float(vec["pipeline_fill_cycles"]),
                            float(vec["loop_overhead_cycles_per_tile"]),
                            MappingProxyType(units), MappingProxyType(instructions)),
        ddr=ddr, shared_sram=sram, l2=l2,
        dma=DmaConfig(dma["engines_per_core"], float(dma["engine_bandwidth_gbps"]),
                      float(dma["setup_cycles"]), dma["burst_bytes"]),
        launch_cycles=float(raw["call"]["launch_cycles"]),
        barrier_cycles=float(raw["call"]["barrier_cycles"]),
        example_addresses=examples,
    )


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
    text = os.fspath(chip)
    known = packaged_chips()
    if text.lower() in known:
        return known[text.lower()]
    if os.path.isfile(text):
        return text
    if text.endswith((".yaml", ".yml")) or os.sep in text:
        raise ConfigError(f"chip file {text!r} does not exist")
    raise ConfigError(f"unknown chip {text!r}; known chips: {', '.join(sorted(known))}, "
                      "or give the path to a YAML chip description")


def load_config(chip: str | os.PathLike) -> ChipConfig:
    """Load and validate a chip description by name or path."""
    path = resolve_chip_path(chip)
    try:
        with open(path, encoding="utf-8") as handle:
            raw = yaml.safe_load(handle)
    except yaml.YAMLError as exc:
        raise ConfigError(f"{path}: not valid YAML: {exc}") from None
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read: {exc.strerror}") from None
    return config_from_dict(raw, path)
