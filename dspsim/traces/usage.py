"""Every shared resource's use over a call or a program, from its trace.

The resources are those the timing model shares: each memory region's link (DDR, shared
SRAM), each DMA pool (every transfer-controller group of a shared pool, or each core's own
engines), each core's L2 port, each kind of vector unit, and the launch and barrier.
:func:`describe_resources` writes what the trace cannot say by itself (peaks, pool sizes,
each call's vector cost) into the trace's metadata; :func:`resource_usage` then reads a
trace model — the one just built, or one read back from a file — into a step function per
resource. The speed-of-light table and the trace's counters both come from it, so that
``dspsim run``, ``dspsim trace summary`` and the Perfetto UI show the same numbers.

A transfer slice carries its bytes and ``data_cycles``, the time its engine held it and
moved data (after setup and any wait for an engine): over that stretch it adds one to its
pool's occupancy and its mean rate to its region's link and its core's L2 port. The
integral of each link's use is therefore exactly the bytes that crossed it.
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from dspsim.sim.chip.model import ChipConfig
from dspsim.sim.engine.model import COMPUTE
from dspsim.sim.engine.vector import VectorCost
from dspsim.traces.model import TraceModel, finite_number

#: Metadata key of the resource description.
RESOURCES = "resources"
#: The key of a lone call's vector cost (programs key theirs by call index).
CALL_KEY = "call"
REGION_LABELS = {"ddr": "DDR", "shared_sram": "shared SRAM"}


def vector_description(config: ChipConfig, cost: VectorCost,
                       mix: Mapping[str, int]) -> dict[str, Any]:
    """What a call's vector work costs each unit kind, per vector iteration, and what each
    instruction of its (unexpanded) ``mix`` comes to on the unit that bounds it."""
    vec = config.vector
    bounding = cost.bounding_unit
    per_instruction = {}
    for instruction, count in mix.items():
        load = 0.0
        for issued, uses in vec.issued[instruction].items():
            unit, occupancy = vec.instructions[issued].occupancy
            if unit == bounding:
                load += count * uses * occupancy / vec.units[unit]
        per_instruction[instruction] = load
    # units as pairs: their order (the chip file's) survives formats that sort keys
    return {"units": [[unit, count] for unit, count in vec.units.items()],
            "unit_cycles": dict(cost.unit_cycles),
            "l2_cycles": cost.l2_cycles, "iteration_cycles": cost.iteration_cycles,
            "bounding_unit": bounding, "lanes": cost.lanes, "mix": dict(mix),
            "instruction_cycles": per_instruction,
            "expanded": sorted(i for i in mix if not vec.instructions[i].issues)}


def describe_resources(config: ChipConfig, vectors: Mapping[str, dict[str, Any]],
                       **extra: Any) -> dict[str, Any]:
    """The resource description a trace's metadata carries (see the module); ``vectors``
    are :func:`vector_description` s by call key, ``extra`` further figures (such as the
    one-core roofline of a call)."""
    pools: dict[str, dict[str, Any]] = {}
    for engine in config.dma.engines:
        name = engine.name.rsplit(".", 1)[0] if "." in engine.name else engine.name
        entry = pools.setdefault(name, {"name": name, "engines": 0, "gbps": []})
        entry["engines"] += 1
        entry["gbps"].append(engine.bandwidth_gbps)
    return {
        "clock_mhz": config.clock_mhz, "chip_cores": config.cores,
        "regions": [{"name": r.name, "label": REGION_LABELS.get(r.name, r.name),
                     "peak_gbps": r.peak_bandwidth_gbps, "achievable_gbps": r.bandwidth_gbps}
                    for r in config.shared_regions],
        "dma_shared": config.dma.shared,
        "dma_pools": list(pools.values()),
        "l2_port_gbps": config.l2.load_store_bytes_per_cycle * config.clock_mhz * 1e-3,
        "launch_cycles": config.launch_cycles, "barrier_cycles": config.barrier_cycles,
        "vector": dict(vectors), **extra,
    }


@dataclass
class Step:
    """A resource's use as a step function: ``values[i]`` from ``times[i]`` on."""

    times: np.ndarray
    values: np.ndarray

    def integral(self, end: float) -> float:
        if not len(self.times):
            return 0.0
        widths = np.diff(np.append(np.minimum(self.times, end), end))
        return float(np.sum(self.values * np.maximum(widths, 0.0)))

    def busy(self, end: float, floor: float = 1e-9) -> float:
        """Cycles in [0, end] during which the value is above ``floor``."""
        if not len(self.times):
            return 0.0
        widths = np.maximum(np.diff(np.append(np.minimum(self.times, end), end)), 0.0)
        return float(np.sum(widths[self.values > floor]))

    def samples(self) -> list[tuple[float, float]]:
        return list(zip(self.times.tolist(), self.values.tolist(), strict=True))


def step_function(starts, ends, weights) -> Step:
    """The sum of ``weights[i]`` over [starts[i], ends[i]), as a step function."""
    starts, ends = np.asarray(starts, float), np.asarray(ends, float)
    weights = np.asarray(weights, float)
    keep = ends > starts
    starts, ends, weights = starts[keep], ends[keep], weights[keep]
    if not len(starts):
        return Step(np.zeros(0), np.zeros(0))
    times = np.concatenate((starts, ends))
    deltas = np.concatenate((weights, -weights))
    order = np.argsort(times, kind="stable")
    times, level = times[order], np.cumsum(deltas[order])
    last = np.append(times[1:] != times[:-1], True)  # the level after every change at a time
    times, level = times[last], level[last]
    level[np.abs(level) < 1e-9 * max(1.0, float(np.max(np.abs(weights))))] = 0.0
    return Step(times, level)


@dataclass
class Usage:
    """Each resource's use over a trace, with what is needed to judge it."""

    total_cycles: float
    resources: dict[str, Any]
    links: dict[str, Step] = field(default_factory=dict)  # region name -> bytes/cycle
    pools: dict[str, Step] = field(default_factory=dict)  # pool name -> engines busy
    ports: dict[int, Step] = field(default_factory=dict)  # core -> bytes/cycle
    vector_busy: dict[int, float] = field(default_factory=dict)  # core -> cycles computing
    # core -> unit kind -> cycles that unit was occupied (iterations x its cycles per one)
    unit_cycles: dict[int, dict[str, float]] = field(default_factory=dict)
    unit_busy: dict[int, dict[str, float]] = field(default_factory=dict)
    call_cycles: dict[str, float] = field(default_factory=dict)  # launch, barrier
    bytes: dict[str, float] = field(default_factory=dict)  # region -> bytes moved


def _core_of(group: str) -> int | None:
    if group.startswith("core ") and group[5:].isdigit():
        return int(group[5:])
    return None


def pool_of(engine_name: str, shared: bool) -> str:
    """The pool an engine belongs to: its controller group (``edma3cc0.tc``) in a shared
    pool, its core's engines (``core 0 dma``) otherwise."""
    return engine_name.rsplit(".", 1)[0] if "." in engine_name else engine_name


def resource_usage(model: TraceModel) -> Usage:
    """Each resource's use in ``model`` (see the module); its metadata must carry
    ``resources`` (traces written by this version of dspsim do)."""
    meta = model.metadata
    resources = meta.get(RESOURCES) or {}
    usage = Usage(float(meta.get("total_cycles") or 0.0), resources)
    shared = bool(resources.get("dma_shared"))
    clock = float(resources.get("clock_mhz") or meta.get("clock_mhz") or 1.0)
    vectors = resources.get("vector") or {}
    transfers: dict[str, list] = {}
    ports: dict[int, list] = {}
    pools: dict[str, list] = {}
    computing: dict[int, list] = {}
    for piece in model.slices:
        args = piece.args
        if args.get("program_slice"):
            continue
        track = model.tracks[piece.track]
        core = _core_of(track.group)
        if core is None:
            if track.name == "call" or track.name.startswith("stream "):
                usage.call_cycles[piece.name] = (usage.call_cycles.get(piece.name, 0.0)
                                                 + piece.end - piece.start)
            continue
        if piece.category == COMPUTE:
            computing.setdefault(core, []).append((piece.start, piece.end))
            vector = vectors.get(str(args.get("call", CALL_KEY)))
            if vector is not None:
                iterations = float(args.get("iterations", 0))
                units = usage.unit_cycles.setdefault(core, {})
                busy = usage.unit_busy.setdefault(core, {})
                for unit, cycles in vector["unit_cycles"].items():
                    units[unit] = units.get(unit, 0.0) + iterations * cycles
                    if cycles:
                        busy[unit] = busy.get(unit, 0.0) + piece.end - piece.start
                l2 = iterations * vector["l2_cycles"]
                units["L2 load/store"] = units.get("L2 load/store", 0.0) + l2
                if l2:
                    busy["L2 load/store"] = busy.get("L2 load/store", 0.0) + \
                        piece.end - piece.start
            continue
        nbytes = args.get("bytes")
        if nbytes is None:
            continue
        data = float(args.get("data_cycles", piece.end - piece.start))
        # a trace keeps hundredths of a cycle: end - data is that end up to float noise,
        # which must not make a handover between two transfers look like an overlap
        start = round(piece.end - data, 6)
        rate = nbytes / data if data > 0 else 0.0
        region = args.get("region", "ddr")
        usage.bytes[region] = usage.bytes.get(region, 0.0) + nbytes
        transfers.setdefault(region, []).append((start, piece.end, rate))
        ports.setdefault(core, []).append((start, piece.end, rate))
        engine = args.get("dma_engine")
        if engine:
            pools.setdefault(pool_of(engine, shared), []).append((start, piece.end, 1.0))
    for region, items in transfers.items():
        usage.links[region] = step_function(*zip(*items, strict=True))
    for core, items in ports.items():
        usage.ports[core] = step_function(*zip(*items, strict=True))
    for pool, items in sorted(pools.items()):
        usage.pools[pool] = step_function(*zip(*items, strict=True))
    for core, spans in computing.items():
        steps = step_function(*zip(*[(a, b, 1.0) for a, b in spans], strict=True))
        usage.vector_busy[core] = steps.busy(float("inf"))
    usage.resources = {**resources, "clock_mhz": clock}
    return usage


# ----------------------------------------------------------------------------- checking
def _number(value: Any, what: str, low: float = 0.0, high: float = 1e18) -> float:
    return finite_number(value, what, low, high)


def _count(value: Any, what: str, low: int = 0) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value < 2 ** 31:
        raise ValueError(f"{what} is {value!r:.40}, not a whole number of at least {low}")
    return value


def _entries(value: Any, kind: type, what: str) -> Any:
    if not isinstance(value, kind):
        expected = "a list" if kind is list else "an object"
        raise ValueError(f"{what} is {value!r:.40}, not {expected}")
    return value


def _text(value: Any, what: str) -> str:
    if not isinstance(value, str):
        raise ValueError(f"{what} is {value!r:.40}, not text")
    return value


def _check_vector(vector: Any, what: str) -> None:
    _entries(vector, dict, what)
    for pair in _entries(vector.get("units", []), list, f"{what} units"):
        if not isinstance(pair, list) or len(pair) != 2:
            raise ValueError(f"{what} units hold {pair!r:.40}, not a [unit, count] pair")
        _text(pair[0], f"{what} unit name")
        _count(pair[1], f"{what} unit count")
    for key in ("unit_cycles", "instruction_cycles", "mix"):
        for name, value in _entries(vector.get(key, {}), dict, f"{what} {key}").items():
            _number(value, f"{what} {key} {name!r:.20}")
    for key in ("l2_cycles", "iteration_cycles"):
        _number(vector.get(key, 0.0), f"{what} {key}")
    _text(vector.get("bounding_unit", ""), f"{what} bounding_unit")
    for name in _entries(vector.get("expanded", []), list, f"{what} expanded"):
        _text(name, f"{what} expanded instruction")
    missing = set(vector.get("instruction_cycles", {})) - set(vector.get("mix", {}))
    if missing:
        raise ValueError(f"{what} instruction_cycles name {sorted(missing)[0]!r:.20}, "
                         f"which its mix lacks")


def check_resources(resources: Any) -> None:
    """ValueError unless ``resources`` has the shape :func:`describe_resources` writes, with
    the types and ranges :func:`resource_usage` and the speed-of-light table rely on (a
    trace read back from a file may hold anything there)."""
    if resources is None:
        return
    _entries(resources, dict, "resources")
    for key, low in (("clock_mhz", 1e-9), ("l2_port_gbps", 0.0), ("one_core_roofline", 0.0)):
        if resources.get(key) is not None:
            _number(resources[key], f"resources {key}", low)
    for key in ("chip_cores", "cores"):
        if resources.get(key) is not None:
            _count(resources[key], f"resources {key}")
    if not isinstance(resources.get("dma_shared", False), bool):
        raise ValueError(f"resources dma_shared is {resources['dma_shared']!r:.40}, not "
                         f"true or false")
    for region in _entries(resources.get("regions", []), list, "resources regions"):
        _entries(region, dict, "a resources region")
        for key in ("name", "label"):
            _text(region.get(key), f"a resources region's {key}")
        _number(region.get("peak_gbps"), "a region's peak_gbps")
        _number(region.get("achievable_gbps"), "a region's achievable_gbps", 1e-12)
    for pool in _entries(resources.get("dma_pools", []), list, "resources dma_pools"):
        _entries(pool, dict, "a resources DMA pool")
        _text(pool.get("name"), "a DMA pool's name")
        _count(pool.get("engines"), "a DMA pool's engines", 1)
        for gbps in _entries(pool.get("gbps"), list, "a DMA pool's gbps"):
            _number(gbps, "a DMA engine's gbps")
    for key, vector in _entries(resources.get("vector", {}), dict, "resources vector").items():
        _check_vector(vector, f"resources vector {key!r:.20}")


def check_usage_args(args: dict[str, Any]) -> None:
    """ValueError unless a slice's args that :func:`resource_usage` reads have their types:
    numbers for the cycles and iterations, text for the region and the DMA engine."""
    for key in ("data_cycles", "iterations"):
        if key in args:
            _number(args[key], key, -1e18)
    for key in ("region", "dma_engine"):
        if args.get(key) is not None:
            _text(args[key], key)
