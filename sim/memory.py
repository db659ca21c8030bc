"""Simulated memory: the chip's address map with lazily allocated storage.

Each region is backed by an anonymous mmap, so a 2 GiB DDR costs host memory only for the
pages actually written, and numpy views into it are zero-copy. The bytes ever written are
tracked as a set of intervals (one entry per write, never per byte): reading bytes that
were never written is an error rather than silent zeros.
"""
from __future__ import annotations

import importlib
import mmap
from dataclasses import dataclass
from types import ModuleType

import numpy as np
from numpy.typing import DTypeLike

from dspsim.sim.chip.load import ChipConfig
from dspsim.sim.errors import AddressError, ArgumentError, CapacityError, DTypeError
from dspsim.sim.intervals import DtypeMap, IntervalSet  # noqa: F401 - part of this API

# POSIX only: the address-space limit, named when a region cannot be reserved
resource: ModuleType | None
try:
    resource = importlib.import_module("resource")
except ImportError:
    resource = None


def _check_storable(dtype: np.dtype) -> None:
    """Memory holds bytes: a dtype of Python object references has none to store."""
    if dtype.hasobject or not dtype.itemsize:
        raise DTypeError(f"dtype {dtype} has no bytes that memory can hold (it holds Python "
                         f"objects or nothing); convert the data to a numeric dtype such as "
                         f"numpy.float32")


def _no_address_space(size: int, label: str, exc: Exception) -> str:
    """Why ``size`` bytes of host address space could not be reserved, and the fix."""
    reason = getattr(exc, "strerror", None) or str(exc)
    limit = ""
    try:
        if resource is None:
            raise ImportError("no resource module on this system")
        soft = resource.getrlimit(resource.RLIMIT_AS)[0]
        if soft != resource.RLIM_INFINITY:
            limit = (f"; this process may use {soft:,} bytes of address space (ulimit -v "
                     f"{soft // 1024:,} KiB)")
    except (ImportError, OSError, ValueError):
        pass
    return (f"cannot reserve {size:,} bytes of host address space for {label} ({reason})"
            f"{limit}; raise the limit (ulimit -v unlimited), or give the chip file a "
            f"smaller memory size (its memory section's size_mib or size_kib): only the "
            f"pages written use real memory, but the whole region needs address space")


class Storage:
    """The bytes of one region: a lazily committed anonymous mapping."""

    def __init__(self, size: int, label: str = "memory") -> None:
        self.size = size
        try:
            self._map = mmap.mmap(-1, size)
        except (OSError, OverflowError, ValueError) as exc:
            raise CapacityError(_no_address_space(size, label, exc)) from None
        self.buffer = np.frombuffer(self._map, dtype=np.uint8)
        self.written = IntervalSet()
        self.dtypes = DtypeMap()


@dataclass(frozen=True)
class Span:
    """A resolved byte range: which region (and which core's L2) and where inside it."""

    region: str  # the memory level's name (the chip file's key under ``memory``)
    core: int | None  # the core owning an L2 span; None for shared regions
    offset: int
    nbytes: int
    address: int
    local: bool = False  # named through a core-local L2 address

    @property
    def end_offset(self) -> int:
        return self.offset + self.nbytes

    def same_storage(self, other: Span) -> bool:
        return self.region == other.region and self.core == other.core

    def overlaps(self, other: Span) -> bool:
        return (self.same_storage(other) and self.offset < other.end_offset
                and other.offset < self.end_offset)


class Memory:
    """The memory map of one chip instance, with its contents."""

    def __init__(self, config: ChipConfig) -> None:
        self.config = config
        self._shared = {r.name: Storage(r.size_bytes, f"{config.name}'s {r.name}")
                        for r in config.shared_regions}
        self._l2: dict[int, Storage] = {}

    # --------------------------------------------------------------- address resolution
    def describe(self) -> str:
        """The memory map as text, for error messages and `dspsim chips`."""
        cfg = self.config
        lines = [f"{r.name} [{r.base_address:#010x}, {r.end_address:#010x})"
                 for r in cfg.shared_regions]
        l2 = cfg.l2
        if l2.core_stride_bytes:
            last = l2.base_address + (cfg.cores - 1) * l2.core_stride_bytes
            lines.append(f"l2 of core c [{l2.base_address:#010x} + c*{l2.core_stride_bytes:#x}, "
                         f"+{l2.size_bytes:#x}) for c < {cfg.cores} (last at {last:#010x})")
        else:
            lines.append(f"l2 of the executing core [{l2.base_address:#010x}, "
                         f"{l2.base_address + l2.size_bytes:#010x})")
        if l2.local_alias_address is not None:
            lines.append(f"l2 local alias [{l2.local_alias_address:#010x}, "
                         f"{l2.local_alias_address + l2.size_bytes:#010x})")
        return "; ".join(lines)

    def _check_core(self, core: int) -> int:
        if isinstance(core, bool) or not isinstance(core, (int, np.integer)):
            raise ArgumentError(f"core={core!r} must be a core number")
        if not 0 <= core < self.config.cores:
            raise ArgumentError(f"core={core} does not exist on {self.config.name}; "
                                f"its cores are 0..{self.config.cores - 1}")
        return int(core)

    def resolve(self, address: int, nbytes: int, *, core: int | None = None,
                alignment: int = 1) -> Span:
        """Locate [address, address + nbytes) in the memory map.

        ``core`` picks the L2 that a core-local address (the local alias, or a chip whose L2
        window is local to each core) refers to; it defaults to core 0.
        """
        if isinstance(address, bool) or not isinstance(address, (int, np.integer)):
            raise AddressError(f"address {address!r} must be an integer")
        address = int(address)
        if alignment > 1 and address % alignment:
            raise AddressError(f"address {address:#x} is not aligned to {alignment} bytes, as its "
                               f"dtype requires; use an address that is a multiple of {alignment}")
        cfg = self.config
        for region in cfg.shared_regions:
            if region.base_address <= address < region.end_address:
                return self._bounded(region.name, None, address - region.base_address, nbytes,
                                     address, region.size_bytes, region.end_address)
        l2 = cfg.l2
        local_bases = [l2.local_alias_address] if l2.local_alias_address is not None else []
        if not l2.core_stride_bytes:
            local_bases.append(l2.base_address)
        for base in local_bases:
            if base <= address < base + l2.size_bytes:
                owner = self._check_core(0 if core is None else core)
                return self._bounded(l2.name, owner, address - base, nbytes, address,
                                     l2.size_bytes, base + l2.size_bytes, local=True)
        if l2.core_stride_bytes:
            rel = address - l2.base_address
            owner, offset = divmod(rel, l2.core_stride_bytes)
            if rel >= 0 and owner < cfg.cores and offset < l2.size_bytes:
                if core is not None and self._check_core(core) != owner:
                    raise AddressError(f"address {address:#x} is in core {owner}'s L2, not in "
                                       f"core {core}'s")
                return self._bounded(l2.name, owner, offset, nbytes, address, l2.size_bytes,
                                     address - offset + l2.size_bytes)
        raise AddressError(f"address {address:#x} is outside every memory region of {cfg.name}; "
                           f"its memory map: {self.describe()}")

    @staticmethod
    def _bounded(region, core, offset, nbytes, address, size, end_address, local=False) -> Span:
        if offset + nbytes > size:
            label = region if core is None else f"core {core}'s l2"
            raise AddressError(
                f"range [{address:#x}, {address + nbytes:#x}) runs {offset + nbytes - size} bytes "
                f"past the end of {label} at {end_address:#x}; use a lower address or a "
                f"shorter length")
        return Span(region, core, offset, nbytes, address, local)

    # --------------------------------------------------------------- contents
    def _storage(self, span: Span) -> Storage:
        if span.core is None:  # a shared level; a private one belongs to a core
            return self._shared[span.region]
        if span.core not in self._l2:
            self._l2[span.core] = Storage(self.config.l2.size_bytes,
                                          f"{self.config.name}'s core {span.core} L2")
        return self._l2[span.core]

    def view(self, span: Span, dtype: DTypeLike) -> np.ndarray:
        """A zero-copy numpy view of the span's bytes as ``dtype`` (no written check)."""
        raw = self._storage(span).buffer[span.offset:span.end_offset]
        return raw.view(dtype)

    def check_written(self, span: Span) -> None:
        gap = self._storage(span).written.first_gap(span.offset, span.end_offset)
        if gap is not None:
            start = span.address + gap[0] - span.offset
            raise AddressError(
                f"bytes [{start:#x}, {start + gap[1] - gap[0]:#x}) were never written; "
                f"write the operand there first (chip.write) before reading it")

    def unwritten(self, span: Span) -> list[tuple[int, int]]:
        """The sub-ranges of ``span`` never written, as (start, end) addresses."""
        written, gaps = self._storage(span).written, []
        start = span.offset
        while (gap := written.first_gap(start, span.end_offset)) is not None:
            shift = span.address - span.offset
            gaps.append((gap[0] + shift, gap[1] + shift))
            start = gap[1]
        return gaps

    def mark_written(self, span: Span, dtype=None) -> None:
        """Record that the span's bytes hold data (written as ``dtype``, if known)."""
        storage = self._storage(span)
        storage.written.add(span.offset, span.end_offset)
        if dtype is not None:
            storage.dtypes.set(span.offset, span.end_offset, np.dtype(dtype).name)

    def written_dtypes(self, span: Span) -> set[str]:
        """The numpy dtype names the span's bytes were written as (by writes and calls)."""
        return self._storage(span).dtypes.within(span.offset, span.end_offset)

    def write(self, address: int, array, *, core: int | None = None) -> Span:
        """Copy ``array`` (flattened, in its own dtype) to ``address``."""
        data = np.ascontiguousarray(array).reshape(-1)
        _check_storable(data.dtype)
        span = self.resolve(address, data.nbytes, core=core, alignment=data.dtype.itemsize)
        self.view(span, data.dtype)[:] = data
        self.mark_written(span, data.dtype)
        return span

    def _elements(self, address, count, dtype, core) -> tuple[Span, np.dtype]:
        """Resolve ``count`` elements of ``dtype`` at ``address``, checking all three."""
        try:
            dtype = np.dtype(dtype)
        except Exception:  # noqa: BLE001 - numpy parses strings such as "," with ast and
            # raises SyntaxError (or TypeError, ValueError, KeyError) for what is no dtype
            raise DTypeError(f"dtype {dtype!r} is not a data type; use fp32, fp16, bf16 or a "
                             f"numpy dtype such as numpy.float32") from None
        _check_storable(dtype)
        if isinstance(count, bool) or not isinstance(count, (int, np.integer)) or count < 0:
            raise ArgumentError(f"count {count!r} must be a non-negative integer")
        span = self.resolve(address, int(count) * dtype.itemsize, core=core,
                            alignment=dtype.itemsize)
        return span, dtype

    def zero(self, address: int, count: int, dtype, *, core: int | None = None) -> Span:
        """Set ``count`` elements of ``dtype`` at ``address`` to zero.

        Bytes never written are already zero in the anonymous mapping, so they are only
        declared written: a large zero operand for a timing-only call costs no host memory.
        """
        span, _ = self._elements(address, count, dtype, core)  # _: the dtype, checked
        if self._storage(span).written.first_gap(span.offset, span.end_offset) != (
                span.offset, span.end_offset):
            self.view(span, np.uint8)[:] = 0  # some bytes hold data: clear them for real
        self.mark_written(span, _)
        return span

    def read(self, address: int, count: int, dtype, *, core: int | None = None) -> np.ndarray:
        """A copy of ``count`` elements of ``dtype`` at ``address``."""
        span, dtype = self._elements(address, count, dtype, core)
        self.check_written(span)
        return self.view(span, dtype).copy()
