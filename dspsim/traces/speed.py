"""The speed of light of a call or a program: every resource's busy share and share of its
peak, what bounds it, and one line of advice derived from the model.

Computed from a trace model (:func:`speed_of_light`), the one a result builds or one read
back from a file, so that ``dspsim run``/``dspsim program`` and ``dspsim trace summary``
print the same table for the same call.

* **busy**: the share of the call (launch to barrier) during which the resource did
  anything: a link carried bytes, a pool had an engine moving data, a vector unit kind
  had work in the loop being run;
* **of peak**: its mean use over the call against what it can do at most: bytes against
  the link's peak bandwidth, engines busy against the pool's size, unit cycles occupied
  against the unit's cycles. Launch and barrier have no peak, only their share.

Vector units and L2 ports are averaged over the cores that took part.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from dspsim.traces.model import TraceModel
from dspsim.traces.usage import CALL_KEY, Usage, resource_usage, step_function

#: CSV/JSON columns of a speed-of-light row, in order (stable: scripts read them).
ROW_FIELDS = ("resource", "kind", "busy_share", "of_peak", "detail")


@dataclass(frozen=True)
class ResourceRow:
    """One resource's line of the table."""

    resource: str  # DDR, shared SRAM, DMA edma3cc0.tc, L2 port core 0, vector alu, launch
    kind: str  # memory, dma, l2 port, vector, call
    busy_share: float  # 0..1 of the call
    of_peak: float | None  # 0..1 of what it can do at most; None: no peak (launch, barrier)
    detail: str


@dataclass
class SpeedOfLight:
    """The table, the bound and the advice."""

    cycles: float
    rows: list[ResourceRow]
    bound: str
    advice: str
    terms: dict[str, float] = field(default_factory=dict)
    #: the L2 ports and per-core DMA pools of the chip's cores that took no part: not shown,
    #: but in the CSV columns, so that they do not depend on the core mask
    idle_rows: list[ResourceRow] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {"cycles": self.cycles, "bound": self.bound, "advice": self.advice,
                "lower_bounds": dict(self.terms), "resources": [asdict(r) for r in self.rows]}

    def row(self, resource: str) -> ResourceRow | None:
        return next((r for r in self.rows if r.resource == resource), None)

    def csv_columns(self) -> dict[str, Any]:
        """The table flattened into one CSV row's columns: ``<resource> busy`` and
        ``<resource> of peak`` per resource, then the bound and the advice."""
        out: dict[str, Any] = {}
        order = {"memory": 0, "dma": 1, "l2 port": 2, "vector": 3, "call": 4}

        def key(row: ResourceRow):
            number = row.resource.split("core ")[-1].split(" ")[0]
            return (order[row.kind], int(number) if number.isdigit() else -1)

        for r in sorted(self.rows + self.idle_rows, key=key):
            out[f"{r.resource} busy"] = round(r.busy_share, 6)
            out[f"{r.resource} of peak"] = None if r.of_peak is None else round(r.of_peak, 6)
        out["bound"], out["advice"] = self.bound, self.advice
        return out


def _gbps(bytes_per_cycle: float, clock_mhz: float) -> float:
    return bytes_per_cycle * clock_mhz * 1e-3


def _memory_rows(usage: Usage, total: float) -> list[ResourceRow]:
    clock = usage.resources["clock_mhz"]
    rows = []
    for region in usage.resources.get("regions", []):
        name, label = region["name"], region["label"]
        moved = usage.bytes.get(name, 0.0)
        step = usage.links.get(name)
        mean = _gbps(moved / total, clock) if total else 0.0
        peak, achievable = region["peak_gbps"], region["achievable_gbps"]
        rows.append(ResourceRow(
            label, "memory", step.busy(total) / total if step and total else 0.0,
            mean / peak if peak else 0.0,
            f"{mean:.3g} of {peak:g} GB/s, {mean / achievable:.0%} of achievable"))
    return rows


def _pool_rows(usage: Usage, total: float) -> list[ResourceRow]:
    rows = []
    sizes = {p["name"]: p for p in usage.resources.get("dma_pools", [])}
    pools = dict(usage.pools)
    if usage.resources.get("dma_shared"):  # every controller group, the idle ones too
        pools = {name: pools.get(name, step_function([], [], [])) for name in sizes}
    for pool, step in pools.items():
        spec = sizes.get(pool) or sizes.get(pool.split(" ", 2)[-1]) or {"engines": 1, "gbps": []}
        engines = spec["engines"]
        mean = step.integral(total) / total if total else 0.0
        each = spec["gbps"][0] if spec["gbps"] else 0.0
        rows.append(ResourceRow(
            f"DMA {pool}", "dma",
            step.busy(total) / total if total else 0.0, mean / engines,
            f"{mean:.2f} of {engines} busy, {each:.3g} GB/s each"))
    return rows


def _port_rows(usage: Usage, total: float) -> list[ResourceRow]:
    clock = usage.resources["clock_mhz"]
    capacity = usage.resources.get("l2_port_gbps") or 0.0
    rows = []
    for core, step in sorted(usage.ports.items()):
        mean = _gbps(step.integral(total) / total, clock) if total else 0.0
        rows.append(ResourceRow(f"L2 port core {core}", "l2 port",
                                step.busy(total) / total if total else 0.0,
                                mean / capacity if capacity else 0.0,
                                f"{mean:.3g} of {capacity:.3g} GB/s (DMA)"))
    return rows


def _vector_rows(usage: Usage, total: float) -> list[ResourceRow]:
    cores = sorted(usage.vector_busy)
    if not cores or not total:
        return []
    units: dict[str, int] = {}
    for vector in usage.resources.get("vector", {}).values():
        units.update((unit, count) for unit, count in vector["units"])
    rows = []
    for unit in [*units, "L2 load/store"]:
        occupied = [usage.unit_cycles.get(c, {}).get(unit, 0.0) for c in cores]
        busy = [usage.unit_busy.get(c, {}).get(unit, 0.0) for c in cores]
        count = units.get(unit)
        what = f"{count} unit{'s' * (count != 1)}" if count is not None else "loads+stores"
        rows.append(ResourceRow(
            f"vector {unit}", "vector", sum(busy) / len(cores) / total,
            sum(occupied) / len(cores) / total,
            f"{what}, mean of {len(cores)} core{'s' * (len(cores) != 1)}"))
    return rows


def _call_rows(usage: Usage, total: float) -> list[ResourceRow]:
    rows = []
    for name in ("launch", "barrier"):
        cycles = usage.call_cycles.get(name, 0.0)
        rows.append(ResourceRow(name, "call", cycles / total if total else 0.0, None,
                                f"{cycles:,.0f} cycles"))
    return rows


def _idle_rows(usage: Usage) -> list[ResourceRow]:
    chip_cores = int(usage.resources.get("chip_cores") or 0)
    rows = [ResourceRow(f"L2 port core {c}", "l2 port", 0.0, 0.0, "idle")
            for c in range(chip_cores) if c not in usage.ports]
    if not usage.resources.get("dma_shared"):
        for pool in usage.resources.get("dma_pools", []):
            rows += [ResourceRow(f"DMA core {c} {pool['name']}", "dma", 0.0, 0.0, "idle")
                     for c in range(chip_cores)
                     if f"core {c} {pool['name']}" not in usage.pools]
    return rows


# ----------------------------------------------------------------------------- advice
def _memory_advice(sol: SpeedOfLight, usage: Usage) -> str:
    row = sol.row(sol.bound)
    region = next((r for r in usage.resources.get("regions", []) if r["label"] == sol.bound),
                  None)
    share = (row.of_peak * region["peak_gbps"] / region["achievable_gbps"]
             if row and region and region["achievable_gbps"] else 0.0)
    text = f"{sol.bound}-bound at {share:.0%} of achievable: more cores cannot help"
    one_core, cores = usage.resources.get("one_core_roofline"), usage.resources.get("cores")
    floor = sol.terms.get("launch overhead", 0.0) + max(
        (v for k, v in sol.terms.items() if k != "launch overhead"), default=0.0)
    if one_core and cores and cores > 1 and floor:
        text += f"; roofline speedup 1 → {cores} cores: {one_core / floor:.2f}×"
    return text


def _vector_advice(usage: Usage) -> str:
    vectors = usage.resources.get("vector") or {}
    vector = vectors.get(CALL_KEY) or next(iter(vectors.values()), None)
    if vector is None:
        return "vector-bound: more cores, wider lanes or more units would help"
    unit, iteration = vector["bounding_unit"], vector["iteration_cycles"]
    if unit == "l2 load/store":
        return (f"vector L2 load/store-bound: the loop's loads and stores take "
                f"{vector['l2_cycles']:g} of its {iteration:g} cycles/vector; a wider L2 "
                f"port or more cores would help")
    costs = vector["instruction_cycles"]
    if not costs:
        return f"vector {unit}-bound: more cores, wider lanes or more units would help"
    top = max(costs, key=costs.get)
    verb = "expands to" if top in vector["expanded"] else "takes"
    count = vector["mix"][top]
    uses = f"{count}× {top}" if count != 1 else top
    return (f"vector {unit}-bound: {uses} {verb} {costs[top]:g} cycles/vector on this chip "
            f"(of {iteration:g} per iteration); more cores or a cheaper {top} would help")


def advice(sol: SpeedOfLight, usage: Usage) -> str:
    """One line on what limits the call and what would change it, from the model."""
    bound, total = sol.bound, sol.cycles
    if bound in ("DDR", "shared SRAM"):
        return _memory_advice(sol, usage)
    if bound == "vector unit":
        return _vector_advice(usage)
    if bound == "DMA engine":
        busiest = max((r for r in sol.rows if r.kind == "dma"), key=lambda r: r.of_peak or 0,
                      default=None)
        where = f" ({busiest.resource} {busiest.of_peak:.0%} busy)" if busiest else ""
        return (f"DMA-engine-bound{where}: transfers wait for engines; more or faster engines, "
                f"or larger tiles to spread each transfer's setup, would help")
    if bound == "L2 port":
        return ("L2-port-bound: every operand crosses each core's L2 port; a wider port or "
                "more cores would help")
    if bound == "launch overhead":
        fixed = sol.terms.get("launch overhead", 0.0)
        return (f"launch-bound: launch and barrier take {fixed / total:.0%} of the call; give "
                f"each call more elements" if total else "launch-bound")
    if bound == "calls on the busiest core":
        return ("bound by the calls on the busiest core, even each alone: give streams other "
                "core masks so that calls spread over more cores")
    if bound == "longest dependency chain":
        return ("bound by the longest dependency chain: calls that wait for each other; "
                "overlap independent work on other streams, or shorten the chain")
    return f"bound by {bound}"


def speed_of_light(model: TraceModel) -> SpeedOfLight:
    """The speed-of-light table of the call or program ``model`` traces."""
    usage = resource_usage(model)
    total = usage.total_cycles
    rows = (_memory_rows(usage, total) + _pool_rows(usage, total) + _port_rows(usage, total)
            + _vector_rows(usage, total) + _call_rows(usage, total))
    terms = {k: float(v) for k, v in (model.metadata.get("roofline_terms") or {}).items()}
    sol = SpeedOfLight(total, rows, model.metadata.get("bound") or "none (length 0)", "",
                       terms, _idle_rows(usage))
    sol.advice = advice(sol, usage) if total else "nothing ran"
    return sol
