"""``dspsim chips`` and ``dspsim ops``: what exists, as fitted tables or as JSON."""
from __future__ import annotations

from dspsim import kernels
from dspsim.cli.args import add_kernels_option
from dspsim.cli.output import Output, add_json_option, number_column, text_column
from dspsim.sim.chip.load import ChipConfig, load_config, packaged_chips
from dspsim.sim.engine.vector import vector_cost
from dspsim.sim.errors import ArgumentError, DspSimError


# --------------------------------------------------------------------------- chips
def add_chips(sub) -> None:
    p = sub.add_parser("chips", help="list the packaged chips")
    add_json_option(p, "the chips")
    p.set_defaults(output_handler=cmd_chips)


def chip_figures(cfg: ChipConfig, path: str) -> dict:
    """A chip's main figures, as JSON data."""
    dma = cfg.dma
    return {
        "name": cfg.name, "file": path, "description": cfg.description, "cores": cfg.cores,
        "clock_mhz": cfg.clock_mhz, "dtypes": list(cfg.dtypes),
        "lane_width_bits": cfg.vector.lane_width_bits,
        "lanes": {d: cfg.lanes(d) for d in cfg.dtypes},
        "vector_units": dict(cfg.vector.units),
        "l2_bytes_per_core": cfg.l2.size_bytes, "l2_base_address": hex(cfg.l2.base_address),
        **{f"{level.name}_bytes": level.size_bytes for level in cfg.levels
           if level.kind != "dram"},
        "memory_levels": [{"name": level.name, "kind": level.kind, "label": level.label,
                           "base_address": hex(level.base_address), "bytes": level.size_bytes,
                           "gbps": level.bandwidth_gbps} for level in cfg.levels],
        "ddr_bytes": cfg.ddr.size_bytes, "ddr_base_address": hex(cfg.ddr.base_address),
        "ddr_peak_gbps": cfg.ddr.peak_bandwidth_gbps,
        "ddr_achievable_gbps": cfg.ddr.bandwidth_gbps,
        "dma": dma.describe(), "dma_shared_pool": dma.shared,
        "dma_model": dma.model,
        "dma_engines": [{"name": e.name, "bandwidth_gbps": e.bandwidth_gbps,
                         "regions": sorted(e.regions)} for e in dma.engines],
        "dma_setup_cycles": dma.setup_cycles, "dma_burst_bytes": dma.burst_bytes,
        "launch_cycles": cfg.launch_cycles, "barrier_cycles": cfg.barrier_cycles,
    }


def cmd_chips(args, out: Output) -> int:
    chips = [(load_config(path), path, name) for name, path in sorted(packaged_chips().items())]
    if args.json:
        out.json([{**chip_figures(cfg, path), "chip_option": name} for cfg, path, name in chips])
        return 0
    columns = [text_column("chip", key=True), number_column("cores"), number_column("clock"),
               text_column("dtypes"), number_column("lanes"), number_column("L2/core"),
               number_column("DDR peak"), text_column("DMA"), text_column("--chip")]
    rows = []
    for cfg, _path, name in chips:
        share = cfg.ddr.bandwidth_gbps / cfg.ddr.peak_bandwidth_gbps
        rows.append([cfg.name, str(cfg.cores), f"{cfg.clock_mhz:g} MHz", ", ".join(cfg.dtypes),
                     f"{cfg.vector.lane_width_bits} bits", f"{cfg.l2.size_bytes >> 10:,} KiB",
                     f"{cfg.ddr.peak_bandwidth_gbps:g} GB/s × {share:g}",
                     cfg.dma.describe(), name])
    out.table(columns, rows, title="packaged chips: --chip takes the name in the last "
              "column, or a chip file's path (copy one with `dspsim chips --json` 'file')")
    return 0


# --------------------------------------------------------------------------- ops
def add_ops(sub) -> None:
    p = sub.add_parser("ops", help="list the operators with parameters, dtypes and cost",
                       description="A table of the operators, one line each; `dspsim ops NAME` "
                       "says all about one (formula, arguments, instruction mix, cost on each "
                       "chip).")
    p.add_argument("name", nargs="?", default=None,
                   help="an operator (e.g. relu_grad, or a C name such as hp_relu_grad_s)")
    p.add_argument("--chip", action="append", default=None,
                   help="chips to cost on (default: every packaged chip)")
    add_json_option(p, "the operators")
    add_kernels_option(p)
    p.set_defaults(output_handler=cmd_ops)


def _cost_on(cfg: ChipConfig, op: kernels.Operator) -> dict:
    dtypes = [d for d in cfg.dtypes if d in kernels.DTYPES and op.supports(d)]
    if not dtypes:
        written = ", ".join(op.dtypes) if op.dtypes is not None else "every dtype"
        return {"dtypes": [], "error": f"{op.stem} is written for {written}; "
                f"{cfg.name} supports {', '.join(cfg.dtypes)}"}
    try:
        cost = vector_cost(cfg, dtypes[0], op.mix)
    except DspSimError as exc:  # a user's chip without an instruction the operator issues
        return {"dtypes": dtypes, "error": str(exc)}
    return {"dtypes": dtypes,
            "names": [kernels.c_name(op, d, s) for d in dtypes
                      for s in kernels.registry.STORAGE.values()],
            "elements_per_iteration": {d: cfg.lanes(d) for d in dtypes},
            "cycles_per_iteration": cost.iteration_cycles,
            "bounding_unit": cost.bounding_unit,
            "issued_mix": dict(cost.mix)}  # the mix with the chip's expansions resolved


def operator_entry(op: kernels.Operator, chips: list[ChipConfig],
                   origin: str | None = None) -> dict:
    """Everything ``dspsim ops`` says about one operator, as JSON data; ``origin``: where
    an operator not of the library was declared."""
    return {
        "stem": op.stem, "summary": op.summary, "formula": op.formula,
        "declared_in": origin or "the operator library",
        "arguments": list(op.args), "shared_storage_adds": "core_mask",
        "inputs": list(op.inputs), "output": op.output,
        "params": [{"name": p.name, "default": p.default, "minimum": p.minimum,
                    "maximum": p.maximum, "doc": p.doc} for p in op.params],
        "dtypes": list(op.dtypes) if op.dtypes else None,
        "mix": dict(op.mix), "mix_note": op.mix_note, "accuracy": op.notes,
        "tolerance_ulps": op.tolerance_ulps,
        "chips": {cfg.name: _cost_on(cfg, op) for cfg in chips},
    }


def operator_named(name: str, found: kernels.KernelSet) -> kernels.Operator:
    """The operator of ``found`` a stem or a C name names; an ArgumentError with the
    closest names."""
    if name in found:
        return found[name]
    cname = found.parse(name)
    if cname is not None:
        return cname.operator
    hint = kernels.closest(name, list(found))
    raise ArgumentError(f"unknown operator {name!r}"
                        + (f"; did you mean {', '.join(hint)}?" if hint else
                           "; `dspsim ops` lists them"))


def cmd_ops(args, out: Output) -> int:
    chips = [load_config(c) for c in (args.chip or sorted(packaged_chips()))]
    found = kernels.kernel_set(args.kernels or None)
    if args.name is not None:
        op = operator_named(args.name, found)
        entry = operator_entry(op, chips, found.origins.get(op.stem))
        if args.json:
            out.json(entry)
        else:
            _detail(op, entry, chips, out)
        return 0
    entries = [operator_entry(op, chips, found.origins.get(op.stem)) for op in found.values()]
    if args.json:
        out.json(entries)
        return 0
    columns = [text_column("operator", key=True), text_column("what it computes"),
               text_column("parameters")]
    columns += [number_column(f"{cfg.name} cycles/iter") for cfg in chips]
    rows = []
    for op, entry in zip(found.values(), entries, strict=True):
        summary = (op.summary if op.stem not in found.origins
                   else f"{op.summary} (from {entry['declared_in']})")
        rows.append([op.stem, summary, _params_text(entry) or "-",
                     *(_cost_text(entry["chips"][cfg.name]) for cfg in chips)])
    out.table(columns, rows, title="operators (C name: <dtype prefix>_<name>_<s|p>; "
              "`dspsim ops NAME` for one in full)")
    return 0


def _params_text(entry: dict) -> str:
    return "; ".join(
        f"{p['name']}" + (f" = {p['default']:g}" if p["default"] is not None else "")
        + (f" (>= {p['minimum']:g})" if p["minimum"] is not None else "")
        for p in entry["params"])


def _cost_text(cost: dict) -> str:
    return "-" if "error" in cost else f"{cost['cycles_per_iteration']:g}"


def _detail(op: kernels.Operator, entry: dict, chips: list[ChipConfig], out: Output) -> None:
    """Everything about one operator, as lines."""
    out.line((op.stem, "bold"), f": {op.summary}")
    out.line(f"  formula: {op.formula}")
    out.line(f"  arguments (C order): {', '.join(op.args)}, core_mask (core_mask in the "
             f"shared-storage _s versions only)")
    if entry["params"]:
        out.line(f"  parameters: {_params_text(entry)}")
    out.line("  instruction mix per vector iteration: "
             + ", ".join(f"{k}×{v}" for k, v in op.mix.items())
             + (f" ({op.mix_note})" if op.mix_note else ""))
    if op.notes:
        out.line(f"  accuracy: {op.notes}")
    for cfg in chips:
        cost = entry["chips"][cfg.name]
        if "error" in cost:
            out.line(f"  on {cfg.name}: cannot run: {cost['error']}")
            continue
        lanes = ", ".join(f"{n} {d}" for d, n in cost["elements_per_iteration"].items())
        issued = ("" if cost["issued_mix"] == dict(op.mix) else "; issues " + ", ".join(
            f"{k}×{v}" for k, v in cost["issued_mix"].items()))
        out.line(f"  on {cfg.name}: {', '.join(cost['names'])}; "
                 f"{cost['cycles_per_iteration']:g} cycles per iteration "
                 f"({_bound_text(cost['bounding_unit'])}) of {lanes} elements{issued}")


def _bound_text(bound: str) -> str:
    """One wording for every chip: the L2 port's bandwidth, or a functional unit by the
    name the chip file gives it."""
    return "bound by the L2 port" if bound == "L2 port" else f"bound by its {bound} units"
