"""Where generated operands go in simulated memory.

At the operator library's example addresses (from the chip config) when every operand
fits there without overlapping the others; otherwise back to back: in DDR for
shared-storage calls, in core 0's L2 for private-storage calls.
"""
from __future__ import annotations

from dspsim.kernels import CName
from dspsim.sim.config import ChipConfig
from dspsim.sim.errors import ArgumentError, CapacityError

_ALIGN = 64  # bytes: keeps every operand aligned for any dtype and burst


def _fits(bases: list[int], nbytes: int, lo: int, hi: int) -> bool:
    spans = sorted((b, b + nbytes) for b in bases)
    inside = all(lo <= start and end <= hi for start, end in spans)
    return inside and all(a[1] <= b[0] for a, b in zip(spans, spans[1:]))


def _back_to_back(count: int, nbytes: int, base: int) -> list[int]:
    stride = -(-max(nbytes, 1) // _ALIGN) * _ALIGN
    return [base + i * stride for i in range(count)]


def place_operands(config: ChipConfig, cname: CName, length: int) -> dict[str, int]:
    """Addresses for each operand (inputs and output) of ``cname`` at ``length``."""
    op = cname.operator
    nbytes = length * cname.dtype.itemsize
    examples = config.example_addresses
    if cname.storage == "shared":
        region = config.ddr
        lo, hi = region.base_address, region.end_address
        if examples is not None and len(examples.shared_inputs) >= len(op.inputs):
            bases = list(examples.shared_inputs[:len(op.inputs)]) + [examples.shared_output]
            if _fits(bases, nbytes, lo, hi):
                return dict(zip(op.inputs + (op.output,), bases))
        bases = _back_to_back(len(op.inputs) + 1, nbytes, lo)
        where = f"{region.name} ({region.size_bytes} bytes)"
    else:
        lo = config.l2.base_address
        hi = lo + config.l2.size_bytes
        if examples is not None and len(examples.private) > len(op.inputs):
            bases = list(examples.private[:len(op.inputs) + 1])
            if _fits(bases, nbytes, lo, hi):
                return dict(zip(op.inputs + (op.output,), bases))
        bases = _back_to_back(len(op.inputs) + 1, nbytes, lo)
        where = f"core 0's L2 ({config.l2.size_bytes} bytes)"
    if not _fits(bases, nbytes, lo, hi):
        raise CapacityError(
            f"{cname.name}: {len(bases)} operands of {length} {cname.dtype.name} elements "
            f"({nbytes} bytes each) do not fit in {where}; use a smaller length"
            + (f" or the shared-storage version {cname.name[:-2]}_s" if cname.storage == "private"
               else ""))
    return dict(zip(op.inputs + (op.output,), bases))


def c_arguments(operator, addresses: dict[str, int], length: int,
                params: dict[str, float] | None = None) -> list:
    """The call's arguments in C order: operand addresses, ``length``, and parameters
    (``None`` where a parameter is not given, so that its default applies)."""
    params = params or {}
    unknown = sorted(set(params) - {p.name for p in operator.params})
    if unknown:
        raise ArgumentError(f"{operator.stem} has no parameter {unknown[0]!r}; its parameters: "
                            f"{', '.join(p.name for p in operator.params) or 'none'}")
    return [addresses[a] if a in addresses else length if a == "length" else params.get(a)
            for a in operator.args]
