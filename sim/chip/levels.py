"""A chip's memory levels, as its file lists them under ``memory``.

Every level is data: a name (its key), a kind (``dram``, ``sram`` or ``private``, see
:data:`~dspsim.sim.chip.model.LEVEL_KINDS`), an address window and the link that carries
its bytes. The levels every core reaches become :class:`RegionConfig` (each one link of the
flow network, each one byte ledger, each one roofline term); the one private level becomes
the :class:`L2Config` (each core's copy and its load/store port). Nothing in the simulator
names a level: a chip with a third shared level (an MSMC or L3) needs only its file.
"""
from __future__ import annotations

from collections.abc import Mapping
from itertools import pairwise
from typing import Any

from dspsim.sim.chip.keys import ADDRESS_LIMIT, LEVEL_KEYS
from dspsim.sim.chip.model import L2Config, RegionConfig
from dspsim.sim.errors import ConfigError

#: Words shown in capitals in a level's default label (``shared_sram`` -> "shared SRAM").
ACRONYMS = frozenset({"ddr", "dram", "sram", "msmc", "l1", "l2", "l3", "hbm"})


def level_kind(spec: Mapping[str, Any]) -> str:
    """A level's kind: as given, else ``private`` if it has a load/store port, ``dram`` if
    it has a peak bandwidth or an efficiency, ``sram`` otherwise."""
    if spec.get("kind") is not None:
        return spec["kind"]
    if spec.get("load_store_bytes_per_cycle") is not None:
        return "private"
    dram = spec.get("efficiency") is not None or spec.get("peak_bandwidth_gbps") is not None
    return "dram" if dram else "sram"


def default_label(name: str, kind: str) -> str:
    """What reports call a level the file gives no label: DDR for DRAM, else its name."""
    if kind == "dram":
        return "DDR"
    return " ".join(w.upper() if w.lower() in ACRONYMS else w for w in name.split("_"))


def _size(spec: Mapping[str, Any], path: str) -> int:
    given = [key for key in ("size_mib", "size_kib") if spec[key] is not None]
    if len(given) != 1:
        raise ConfigError(f"{path}: give its size as size_mib or size_kib (one of them)")
    return spec["size_mib"] << 20 if given[0] == "size_mib" else spec["size_kib"] << 10


def _check_keys(spec: Mapping[str, Any], kind: str, path: str) -> None:
    required, optional = LEVEL_KEYS[kind]
    for key in required:
        if spec[key] is None:
            raise ConfigError(f"{path}.{key}: missing key (a {kind} level needs "
                              f"{', '.join(required)})")
    allowed = set(required) | set(optional) | {"kind", "label", "base_address", "size_mib",
                                               "size_kib"}
    for key, value in spec.items():
        if value is not None and key not in allowed:
            raise ConfigError(f"{path}.{key}: not a key of a {kind} level; remove it (or set "
                              f"kind to the level it describes)")


def build_levels(memory: Mapping[str, Mapping[str, Any]], cores: int, source: str
                 ) -> tuple[tuple[RegionConfig, ...], L2Config]:
    """The shared levels in file order and the private one; a ConfigError naming the key
    path of any problem (a missing key, not exactly one DRAM or private level, windows
    that overlap or pass 32 bits)."""
    shared, private = [], []
    for name, spec in memory.items():
        path = f"{source}: memory.{name}"
        kind = level_kind(spec)
        _check_keys(spec, kind, path)
        size = _size(spec, path)
        label = spec["label"] or default_label(name, kind)
        if kind == "private":
            private.append(_private(name, spec, size, path))
        elif kind == "dram":
            peak = spec["peak_bandwidth_gbps"]
            shared.append(RegionConfig(name, spec["base_address"], size,
                                       peak * spec["efficiency"], peak, kind, label))
        else:
            gbps = spec["bandwidth_gbps"]
            shared.append(RegionConfig(name, spec["base_address"], size, gbps, gbps, kind,
                                       label))
    for kind, found in (("dram", [r for r in shared if r.kind == "dram"]),
                        ("private", private)):
        if len(found) != 1:
            names = ", ".join(getattr(f, "name", "?") for f in found) or "none"
            raise ConfigError(f"{source}: memory: a chip has exactly one {kind} level, this "
                              f"one has {len(found)} ({names})")
    _check_windows(shared, private[0], cores, source)
    return tuple(shared), private[0]


def _private(name: str, spec: Mapping[str, Any], size: int, path: str) -> L2Config:
    l2 = L2Config(spec["base_address"], spec["core_stride_bytes"] or 0,
                  spec["local_alias_address"], size,
                  float(spec["load_store_bytes_per_cycle"]), spec["reserve_kib"] << 10, name)
    if l2.reserve_bytes >= l2.size_bytes:
        raise ConfigError(f"{path}.reserve_kib: {spec['reserve_kib']} leaves no room for "
                          f"buffers in a {size >> 10} KiB {name}")
    if l2.core_stride_bytes and l2.core_stride_bytes < l2.size_bytes:
        raise ConfigError(f"{path}.core_stride_bytes: {l2.core_stride_bytes:#x} is smaller "
                          f"than the {name} size {l2.size_bytes:#x}: the cores' copies would "
                          f"overlap")
    return l2


def _check_windows(shared: list[RegionConfig], l2: L2Config, cores: int, source: str) -> None:
    """Every address window within 32 bits and apart from every other."""
    windows = [(f"memory.{r.name}", r.base_address, r.size_bytes) for r in shared]
    for core in range(cores if l2.core_stride_bytes else 1):
        windows.append((f"memory.{l2.name} (core {core})",
                        l2.base_address + core * l2.core_stride_bytes, l2.size_bytes))
    if l2.local_alias_address is not None:
        windows.append((f"memory.{l2.name}.local_alias_address", l2.local_alias_address,
                        l2.size_bytes))
    for label, base, size in windows:
        if base + size > ADDRESS_LIMIT:
            raise ConfigError(f"{source}: {label}: ends at {base + size:#x}, past the 32-bit "
                              f"address space; lower its base address or its size")
    ordered = sorted(windows, key=lambda w: w[1])
    for (la, ba, sa), (lb, bb, _) in pairwise(ordered):
        if ba + sa > bb:
            raise ConfigError(f"{source}: {la} [{ba:#x}, {ba + sa:#x}) overlaps {lb} starting "
                              f"at {bb:#x}; move one of them")
