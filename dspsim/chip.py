"""The launcher: C-named operator calls on a simulated chip.

``Chip`` joins the two halves of dspsim. A call such as
``chip.fp_relu_grad_s(src0, src1, dst, length, core_mask)`` is resolved to a kernel
(:mod:`dspsim.kernels`), its arguments are checked against the chip, the numerics run with
numpy, and the kernel's instruction mix goes to the hardware model (:mod:`dspsim.sim`).
Nothing is written to simulated memory until every check has passed.
"""
from __future__ import annotations

import os
import threading

import numpy as np

from dspsim import kernels as library
from dspsim.binding import BoundCall, bind_call
from dspsim.methods import operator_method
from dspsim.programs.program import Program
from dspsim.result import RunResult
from dspsim.seam import call_result, compute_into_destination, time_call
from dspsim.sim.chip.load import ChipConfig, load_config_and_text
from dspsim.sim.engine.job import Operand
from dspsim.sim.engine.machine import check_fidelity
from dspsim.sim.errors import ArgumentError, DTypeError
from dspsim.sim.memory import Memory


def _numpy_dtype(dtype):
    """fp32/fp16/bf16 as their numpy types; anything else as given."""
    if isinstance(dtype, str) and dtype in library.DTYPES:
        return library.DTYPES[dtype].numpy
    return dtype


class UnknownOperatorError(ArgumentError, AttributeError):
    """A name that is no operator of the library: also an AttributeError, so that
    ``hasattr(chip, name)`` is False and ``getattr(chip, name, default)`` gives the default."""


class UnsupportedOperatorError(DTypeError, AttributeError):
    """An operator in a dtype the chip lacks: not an attribute of that chip either."""


class Chip:
    """One simulated chip: its configuration, its memory and its operator library.

    Operators are methods named as in C, e.g. ``chip.fp_relu_grad_s(...)``; see
    ``chip.operator_names()``. Each returns a :class:`~dspsim.result.RunResult`.
    """

    def __init__(self, config: ChipConfig | str | os.PathLike = "ft78ne", *,
                 kernels=None) -> None:
        """``config``: a packaged chip's name, a YAML path or a ChipConfig. ``kernels``:
        users' own operators, offered by this chip only: a kernel file's path, an
        :class:`~dspsim.kernels.Operator`, a :class:`~dspsim.kernels.KernelSet`, or a list
        of those (see docs/custom-kernels.md); installed packages' operators are always
        offered."""
        #: the chip file's exact text (None for a ChipConfig built in Python): what a saved
        #: run keeps, so that it can be reproduced
        self.description_yaml: str | None = None
        if isinstance(config, ChipConfig):
            self.config = config
        else:
            self.config, self.description_yaml = load_config_and_text(config)
        #: the operators this chip offers, by stem: the library's, installed packages' and
        #: the ``kernels`` given (never shared with another chip)
        self.kernels = library.kernel_set(kernels)
        self.memory = Memory(self.config)
        #: Threads may share a chip: memory writes, reads, calls and program runs hold this
        #: lock, so that each sees the memory as a whole (see docs/threads.md).
        self.lock = threading.RLock()

    def __repr__(self) -> str:
        return f"Chip({self.config.name!r}, {self.config.cores} cores)"

    @property
    def name(self) -> str:
        return self.config.name

    # --------------------------------------------------------------- memory
    def write(self, address: int, array, *, core: int | None = None) -> None:
        """Store ``array`` (in its own dtype) at ``address``; ``core`` picks a local L2."""
        try:
            data = np.asarray(array)
        except (ValueError, TypeError) as exc:  # ragged nested lists, among others
            raise ArgumentError(f"cannot store {type(array).__name__} at {address!r}: "
                                f"{str(exc).splitlines()[0]}; pass a numpy array") from None
        with self.lock:
            self.memory.write(address, data, core=core)

    def zero(self, address: int, count: int, dtype, *, core: int | None = None) -> None:
        """Store ``count`` zeros of ``dtype`` at ``address``; free of host memory where the
        bytes were never written (inputs of timing-only calls, whose data does not matter)."""
        with self.lock:
            self.memory.zero(address, count, _numpy_dtype(dtype), core=core)

    def read(self, address: int, count: int, dtype, *, core: int | None = None) -> np.ndarray:
        """A copy of ``count`` elements of ``dtype`` (numpy dtype or fp32/fp16/bf16)."""
        with self.lock:
            return self.memory.read(address, count, _numpy_dtype(dtype), core=core)

    # --------------------------------------------------------------- operator names
    def operator_names(self) -> list[str]:
        """Every C name this chip offers (its dtypes × operators × storage versions)."""
        return self.kernels.names_for(self.config.dtypes)

    def __dir__(self):
        return sorted(set(super().__dir__()) | set(self.operator_names()))

    def __getattr__(self, name: str):
        if name.startswith("_"):  # Python's and tools' probes (_repr_html_, __array__, ...)
            raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")
        return operator_method(self.call, self.config, self.resolve(name))

    def resolve(self, name: str) -> library.CName:
        """The operator a C name refers to; a clear error if the chip cannot run it."""
        if not isinstance(name, str):
            raise ArgumentError(f"operator name {name!r} must be a string such as "
                                f"'fp_relu_grad_s'; `dspsim ops` lists them")
        cname = self.kernels.parse(name)
        written_for = self.kernels.parse(name, any_dtype=True)
        if cname is None and written_for is not None:
            op = written_for.operator
            assert op.dtypes is not None, "an operator that refuses a dtype lists its own"
            raise UnsupportedOperatorError(
                f"{name}: operator {op.stem} is written for {', '.join(op.dtypes)} only, not "
                f"{written_for.dtype.name} (use "
                f"{', '.join(library.c_name(op, d, written_for.storage) for d in op.dtypes)})")
        if cname is None:
            everything = self.kernels.names_for(library.DTYPES)
            hint = library.closest(name, self.operator_names()) or library.closest(name, everything)
            suggestion = f"; did you mean {', '.join(hint)}?" if hint else \
                "; `dspsim ops` lists them"
            raise UnknownOperatorError(f"unknown operator {name!r}{suggestion}")
        if cname.dtype.name not in self.config.dtypes:
            offered = [library.c_name(cname.operator, d, cname.storage)
                       for d in self.config.dtypes
                       if d in library.DTYPES and cname.operator.supports(d)]
            raise UnsupportedOperatorError(
                f"{name}: {self.config.name} does not support {cname.dtype.name}; its dtypes are "
                f"{', '.join(self.config.dtypes)} (use {', '.join(offered)})")
        return cname

    # --------------------------------------------------------------- programs
    def program(self) -> Program:
        """A new program on this chip: calls on streams, run together on one timeline
        (see :mod:`dspsim.programs`)."""
        return Program(self)

    # --------------------------------------------------------------- calls
    def call(self, name: str, *args, core: int | None = None, numerics: bool = True,
             fidelity: str = "fast", tile_bytes: int | None = None, **kwargs) -> RunResult:
        """Run the operator ``name`` with C-ordered ``args`` (or keyword arguments).

        ``core`` chooses the executing core of a private-storage call whose operands use a
        core-local L2 address. ``numerics=False`` skips computing and storing the result
        (timing only). ``fidelity="detailed"`` times the call with DMA bursts and every
        vector iteration instead of the default ``"fast"`` model (slower; for small
        lengths). ``tile_bytes`` fixes the tile size of a shared-storage call (bytes per
        operand buffer) instead of the one that minimises its time.
        """
        numerics = _check_numerics(numerics)
        _check_options(name, fidelity, tile_bytes)
        with self.lock:
            bound = self.bind(name, args, kwargs, core=core)
            return PreparedCall(self, bound, fidelity, tile_bytes).finish(numerics=numerics)

    def prepare(self, name: str, *args, core: int | None = None, fidelity: str = "fast",
                tile_bytes: int | None = None, **kwargs) -> PreparedCall:
        """Check a call and time it without touching memory; its inputs may be written after.

        Every argument is checked against the operator and the chip, and the timing model
        runs (it rejects what cannot run, such as tiles that do not fit L2). Nothing is
        read or written: write the inputs at ``prepared.inputs``' addresses, then
        ``prepared.finish()`` computes the result and returns the RunResult.
        """
        _check_options(name, fidelity, tile_bytes)
        bound = self.bind(name, args, kwargs, core=core, require_written=False)
        return PreparedCall(self, bound, fidelity, tile_bytes)

    def bind(self, name: str, args: tuple, kwargs: dict, *, core: int | None = None,
             require_written: bool = True) -> BoundCall:
        """Check a call's arguments against the operator and the chip, touching nothing.

        ``require_written=False`` leaves out the check that the inputs hold data, for a
        caller that writes them once the call is known to be valid.
        """
        cname = self.resolve(name)
        with self.lock:  # it reads which bytes hold data
            return bind_call(cname, self.memory, args, kwargs, core=core,
                             require_written=require_written)


class PreparedCall:
    """A checked and timed call whose inputs may still be written (see :meth:`Chip.prepare`)."""

    def __init__(self, chip: Chip, bound: BoundCall, fidelity: str,
                 tile_bytes: int | None = None, *, record_slices: bool = True) -> None:
        """``record_slices=False`` times the call without keeping its engine activities:
        the cycles are the same, the result has no trace (for fits and studies that time
        many calls)."""
        self.chip = chip
        self.bound = bound
        self.fidelity = fidelity
        # The timing model runs first: whatever it rejects (tiles that do not fit L2, an
        # instruction the chip lacks) is rejected before any memory is touched.
        self.timing = time_call(chip.config, bound, fidelity=fidelity, tile_bytes=tile_bytes,
                                record_slices=record_slices)

    @property
    def inputs(self) -> tuple[Operand, ...]:
        """The input operands: C argument names and where their bytes live."""
        return self.bound.inputs

    @property
    def output(self) -> Operand:
        return self.bound.output

    def finish(self, *, numerics: bool = True) -> RunResult:
        """Compute the result into the destination (unless ``numerics=False``) and return
        the call's RunResult; the inputs must have been written."""
        chip, bound = self.chip, self.bound
        with chip.lock:
            for operand in bound.inputs:
                chip.memory.check_written(operand.span)
            if numerics:
                compute_into_destination(chip.memory, bound)
        return call_result(chip.config, bound, self.timing, self.fidelity)


def _check_options(name: str, fidelity, tile_bytes) -> None:
    check_fidelity(fidelity)
    if tile_bytes is not None and (isinstance(tile_bytes, bool)
                                   or not isinstance(tile_bytes, (int, np.integer))
                                   or int(tile_bytes) <= 0):
        raise ArgumentError(f"{name}: tile_bytes={tile_bytes!r} must be a positive number "
                            "of bytes per operand tile, or None to let the call choose")


def _check_numerics(numerics) -> bool:
    if not isinstance(numerics, (bool, np.bool_)):
        raise ArgumentError(f"numerics={numerics!r} must be True (compute the result) or False "
                            f"(timing only)")
    return bool(numerics)


def load_chip(chip: str | os.PathLike = "ft78ne") -> Chip:
    """A fresh chip (empty memory) from a packaged name or a YAML path."""
    return Chip(chip)
