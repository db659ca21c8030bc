"""The launcher: C-named operator calls on a simulated chip.

``Chip`` joins the two halves of dspsim. A call such as
``chip.fp_relu_grad_s(src0, src1, dst, length, core_mask)`` is resolved to a kernel
(:mod:`dspsim.kernels`), its arguments are checked against the chip, the numerics run with
numpy, and the kernel's instruction mix goes to the hardware model (:mod:`dspsim.sim`).
Nothing is written to simulated memory until every check has passed.
"""
from __future__ import annotations

import functools
import os
from dataclasses import dataclass
from typing import Any

import numpy as np

from dspsim import kernels
from dspsim.result import RunResult, make_result
from dspsim.sim.config import ChipConfig, load_config
from dspsim.sim.errors import AddressError, ArgumentError, DTypeError
from dspsim.sim.job import Job, Operand
from dspsim.sim.machine import check_fidelity, run_job
from dspsim.sim.memory import Memory, Span

_INT_TYPES = (int, np.integer)
#: Elements per block of the numerics: 1 MiB of fp32, so that a kernel's temporaries stay
#: in the host's caches (measured fastest between 2^16 and 2^20).
_BLOCK_ELEMENTS = 1 << 18


def _numpy_dtype(dtype):
    """fp32/fp16/bf16 as their numpy types; anything else as given."""
    if isinstance(dtype, str) and dtype in kernels.DTYPES:
        return kernels.DTYPES[dtype].numpy
    return dtype


def _is_int(value: Any) -> bool:
    return isinstance(value, _INT_TYPES) and not isinstance(value, bool)


@dataclass(frozen=True)
class BoundCall:
    """A call whose arguments have been checked: ready to compute and simulate."""

    cname: kernels.CName
    length: int
    inputs: tuple[Operand, ...]
    output: Operand
    params: dict[str, float]
    cores: tuple[int, ...]
    core_mask: int | None
    warnings: tuple[str, ...]


class Chip:
    """One simulated chip: its configuration, its memory and its operator library.

    Operators are methods named as in C, e.g. ``chip.fp_relu_grad_s(...)``; see
    ``chip.operator_names()``. Each returns a :class:`~dspsim.result.RunResult`.
    """

    def __init__(self, config: ChipConfig | str | os.PathLike = "ft78ne") -> None:
        self.config = config if isinstance(config, ChipConfig) else load_config(config)
        self.memory = Memory(self.config)

    def __repr__(self) -> str:
        return f"Chip({self.config.name!r}, {self.config.cores} cores)"

    @property
    def name(self) -> str:
        return self.config.name

    # --------------------------------------------------------------- memory
    def write(self, address: int, array, *, core: int | None = None) -> None:
        """Store ``array`` (in its own dtype) at ``address``; ``core`` picks a local L2."""
        self.memory.write(address, np.asarray(array), core=core)

    def zero(self, address: int, count: int, dtype, *, core: int | None = None) -> None:
        """Store ``count`` zeros of ``dtype`` at ``address``; free of host memory where the
        bytes were never written (inputs of timing-only calls, whose data does not matter)."""
        self.memory.zero(address, count, _numpy_dtype(dtype), core=core)

    def read(self, address: int, count: int, dtype, *, core: int | None = None) -> np.ndarray:
        """A copy of ``count`` elements of ``dtype`` (numpy dtype or fp32/fp16/bf16)."""
        return self.memory.read(address, count, _numpy_dtype(dtype), core=core)

    # --------------------------------------------------------------- operator names
    def operator_names(self) -> list[str]:
        """Every C name this chip offers (its dtypes × operators × storage versions)."""
        return kernels.names_for(self.config.dtypes)

    def __dir__(self):
        return sorted(set(super().__dir__()) | set(self.operator_names()))

    def __getattr__(self, name: str):
        if name.startswith("__"):
            raise AttributeError(name)
        cname = self.resolve(name)
        return functools.partial(self.call, cname.name)

    def resolve(self, name: str) -> kernels.CName:
        """The operator a C name refers to; a clear error if the chip cannot run it."""
        if not isinstance(name, str):
            raise ArgumentError(f"operator name {name!r} must be a string such as "
                                f"'fp_relu_grad_s'; `dspsim ops` lists them")
        cname = kernels.parse(name)
        if cname is None:
            everything = kernels.names_for(kernels.DTYPES)
            hint = kernels.closest(name, self.operator_names()) or kernels.closest(name, everything)
            raise ArgumentError(
                f"unknown operator {name!r}" + (f"; did you mean {', '.join(hint)}?" if hint else
                                                 "; `dspsim ops` lists them"))
        if cname.dtype.name not in self.config.dtypes:
            raise DTypeError(
                f"{name}: {self.config.name} does not support {cname.dtype.name}; its dtypes are "
                f"{', '.join(self.config.dtypes)} (use "
                f"{', '.join(kernels.c_name(cname.operator, d, cname.storage) for d in self.config.dtypes if d in kernels.DTYPES)})")
        return cname

    # --------------------------------------------------------------- calls
    def call(self, name: str, *args, core: int | None = None, numerics: bool = True,
             fidelity: str = "fast", **kwargs) -> RunResult:
        """Run the operator ``name`` with C-ordered ``args`` (or keyword arguments).

        ``core`` chooses the executing core of a private-storage call whose operands use a
        core-local L2 address. ``numerics=False`` skips computing and storing the result
        (timing only). ``fidelity="detailed"`` times the call with DMA bursts and every
        vector iteration instead of the default ``"fast"`` model (slower; for small
        lengths).
        """
        check_fidelity(fidelity)
        bound = self.bind(name, args, kwargs, core=core)
        # The timing model runs first: whatever it rejects (tiles that do not fit L2, an
        # instruction the chip lacks) is rejected before the destination is touched.
        timing = run_job(self.config, self._job(bound), fidelity=fidelity)
        if numerics:
            self._compute_into_destination(bound)
        return self._result(bound, timing, fidelity)

    def bind(self, name: str, args: tuple, kwargs: dict, *, core: int | None = None) -> BoundCall:
        """Check a call's arguments against the operator and the chip, touching nothing."""
        cname = self.resolve(name)
        op = cname.operator
        names = cname.args
        if len(args) > len(names):
            raise ArgumentError(f"{name} takes {len(names)} arguments ({', '.join(names)}), "
                                f"got {len(args)}: {cname.signature()}")
        values = dict(zip(names, args))
        for key, value in kwargs.items():
            if key not in names:
                raise ArgumentError(f"{name} has no argument {key!r}; its arguments are "
                                    f"{', '.join(names)}")
            if key in values:
                raise ArgumentError(f"{name}: {key} given twice")
            values[key] = value
        optional = {p.name for p in op.params if p.default is not None} | {"core_mask"}
        missing = [n for n in names if n not in values and n not in optional]
        if missing:
            raise ArgumentError(f"{name}: missing argument {', '.join(missing)}; "
                                f"{cname.signature()}")

        length = values["length"]
        if not _is_int(length):
            raise ArgumentError(f"{name}: length={length!r} must be an integer")
        length = int(length)
        if length < 0:
            raise ArgumentError(f"{name}: length={length} must be >= 0 (0 does nothing)")
        params = {p.name: p.validate(name, values.get(p.name)) for p in op.params}

        itemsize = cname.dtype.itemsize
        spans = {}
        for operand in op.inputs + (op.output,):
            address = values[operand]
            if not _is_int(address):
                raise ArgumentError(f"{name}: {operand}={address!r} must be an address (int)")
            spans[operand] = self.memory.resolve(int(address), length * itemsize, core=core,
                                                 alignment=itemsize)
        warnings: list[str] = []
        if cname.storage == "shared":
            self._check_shared(name, spans)
            cores, core_mask = self._cores_of_mask(name, values.get("core_mask"), warnings)
        else:
            cores, core_mask = (self._check_private(name, spans),), None
        self._check_overlaps(name, op, spans)
        for operand in op.inputs:
            self.memory.check_written(spans[operand])
        return BoundCall(cname, length, tuple(Operand(n, spans[n]) for n in op.inputs),
                         Operand(op.output, spans[op.output]), params, cores, core_mask,
                         tuple(warnings))

    @staticmethod
    def _check_shared(name: str, spans: dict[str, Span]) -> None:
        for operand, span in spans.items():
            if span.region == "l2":
                private = name[:-2] + "_p"
                raise AddressError(
                    f"{name}: {operand} at {span.address:#x} is in core {span.core}'s private L2; "
                    f"shared-storage calls take DDR or shared SRAM addresses; for operands "
                    f"already in L2 use {private}")

    def _check_private(self, name: str, spans: dict[str, Span]) -> int:
        shared_version = name[:-2] + "_s"
        owners = set()
        for operand, span in spans.items():
            if span.region != "l2":
                raise AddressError(
                    f"{name}: {operand} at {span.address:#x} is in {span.region}, outside the "
                    f"executing core's L2; private-storage calls take L2 addresses; for operands "
                    f"in DDR or shared SRAM use {shared_version}")
            owners.add(span.core)
        if len(owners) > 1:
            where = ", ".join(f"{o} in core {s.core}'s L2" for o, s in spans.items())
            raise AddressError(f"{name}: operands are split across cores' L2 ({where}); a "
                               f"private-storage call runs on one core: put them in one L2")
        return owners.pop()

    def _cores_of_mask(self, name: str, mask, warnings: list[str]) -> tuple[tuple[int, ...], int]:
        count = self.config.cores
        if mask is None:
            mask = (1 << count) - 1
        if not _is_int(mask) or mask < 0:
            raise ArgumentError(f"{name}: core_mask={mask!r} must be a non-negative integer bit "
                                f"mask (bit i selects core i)")
        mask = int(mask)
        cores = tuple(i for i in range(count) if mask >> i & 1)
        if not cores:
            raise ArgumentError(
                f"{name}: core_mask={mask:#x} selects no core of {self.config.name}, which has "
                f"{count} cores (valid bits 0..{count - 1}, all cores: {(1 << count) - 1:#x})")
        if mask >> count:
            warnings.append(
                f"core_mask={mask:#x} has bits above {self.config.name}'s {count} cores; they "
                f"are ignored and the call runs on cores {', '.join(map(str, cores))}")
        return cores, mask

    @staticmethod
    def _check_overlaps(name: str, op: kernels.Operator, spans: dict[str, Span]) -> None:
        out = spans[op.output]
        for operand in op.inputs:
            src = spans[operand]
            if src.overlaps(out) and src.offset != out.offset:
                raise AddressError(
                    f"{name}: {op.output} [{out.address:#x}, +{out.nbytes:#x}) partially overlaps "
                    f"{operand} [{src.address:#x}, +{src.nbytes:#x}); use the same address for "
                    f"an in-place call or separate the ranges")

    # --------------------------------------------------------------- execution
    def _compute_into_destination(self, bound: BoundCall) -> None:
        """Run the kernel's math on zero-copy views of the inputs and store the result.

        Operators are elementwise, so the range is computed in blocks of
        ``_BLOCK_ELEMENTS``, each vectorised and copied once straight into the
        destination's simulated memory (casting there if the kernel returned another
        dtype). A block's temporaries stay in the host's caches and the memory they take
        stays small whatever the length. In-place calls are safe: each block reads its
        inputs before its result is stored, and blocks do not overlap.
        """
        dtype = bound.cname.dtype.numpy
        inputs = [self.memory.view(o.span, dtype) for o in bound.inputs]
        destination = self.memory.view(bound.output.span, dtype)
        compute = bound.cname.operator.compute
        with np.errstate(all="ignore"):  # inf/NaN propagate as on the hardware
            for first in range(0, bound.length, _BLOCK_ELEMENTS):
                block = slice(first, first + _BLOCK_ELEMENTS)
                destination[block] = compute(*(array[block] for array in inputs),
                                             **bound.params)
        self.memory.mark_written(bound.output.span)

    def _job(self, bound: BoundCall) -> Job:
        cname = bound.cname
        return Job(label=cname.operator.stem, dtype=cname.dtype.name,
                   itemsize=cname.dtype.itemsize, length=bound.length, inputs=bound.inputs,
                   outputs=(bound.output,), mix=cname.operator.mix, storage=cname.storage,
                   cores=bound.cores)

    def _result(self, bound: BoundCall, timing, fidelity: str = "fast") -> RunResult:
        cfg = self.config
        metadata = {
            "chip": cfg.name, "operator": bound.cname.name, "dtype": bound.cname.dtype.name,
            "storage": bound.cname.storage, "length": bound.length,
            "core_mask": bound.core_mask, "cores": list(bound.cores),
            "clock_mhz": cfg.clock_mhz, "params": bound.params,
            "operands": {o.name: hex(o.span.address) for o in bound.inputs + (bound.output,)},
            "warnings": list(bound.warnings), "fidelity": fidelity,
            "ddr_peak_gbps": cfg.ddr.peak_bandwidth_gbps,
            "ddr_achievable_gbps": cfg.ddr.bandwidth_gbps,
            "dma_model": timing.dma_model,
        }
        return make_result(timing=timing, metadata=metadata, ddr_peak_gbps=cfg.ddr.peak_bandwidth_gbps,
                           ddr_achievable_gbps=cfg.ddr.bandwidth_gbps, clock_mhz=cfg.clock_mhz,
                           warnings=list(bound.warnings))


def load_chip(chip: str | os.PathLike = "ft78ne") -> Chip:
    """A fresh chip (empty memory) from a packaged name or a YAML path."""
    return Chip(chip)


def simulate(name: str, *arrays, chip: Chip | str = "ft78ne", core_mask: int | None = None,
             core: int | None = None, fidelity: str = "fast",
             **params) -> tuple[np.ndarray, RunResult]:
    """Run an operator on numpy arrays: place them in simulated memory, call, read back.

    ``arrays`` are the operator's inputs in C order (e.g. ``dy, x`` for relu_grad); they are
    converted to the call's dtype; ``params`` are the operator's parameters (``alpha=0.1``).
    Returns ``(result array, RunResult)``.
    """
    from dspsim.placement import c_arguments, place_operands  # the CLI's placement too

    chip = chip if isinstance(chip, Chip) else Chip(chip)
    cname = chip.resolve(name)
    op = cname.operator
    if len(arrays) != len(op.inputs):
        raise ArgumentError(f"{name} takes {len(op.inputs)} input arrays "
                            f"({', '.join(op.inputs)}), got {len(arrays)}")
    flat = [np.asarray(a).reshape(-1) for a in arrays]
    length = len(flat[0]) if flat else 0
    if any(len(a) != length for a in flat):
        raise ArgumentError(f"{name}: input arrays differ in length: {[len(a) for a in flat]}")
    converted = []
    for operand, array in zip(op.inputs, flat):
        try:
            converted.append(array.astype(cname.dtype.numpy))
        except (TypeError, ValueError) as exc:
            raise DTypeError(f"{name}: input {operand} of dtype {array.dtype} cannot be "
                             f"converted to {cname.dtype.name}: {exc}") from None
    addresses = place_operands(chip.config, cname, length)
    for operand, array in zip(op.inputs, converted):
        chip.write(addresses[operand], array, core=core)
    args = c_arguments(op, addresses, length, params)
    kwargs = {"core_mask": core_mask} if cname.storage == "shared" else {}
    result = chip.call(name, *args, core=core, fidelity=fidelity, **kwargs)
    out = chip.read(addresses[op.output], length, cname.dtype.numpy, core=core)
    return out, result
