"""Where generated operands go in simulated memory.

At the operator library's example addresses (from the chip config) when every operand
fits there without overlapping the others; otherwise back to back: in DDR for
shared-storage calls, in core 0's L2 for private-storage calls. A shared-storage call may
ask for shared SRAM instead of DDR: its operands then go back to back from the SRAM's base.
"""
from __future__ import annotations

from itertools import pairwise

from dspsim.kernels import CName
from dspsim.sim.chip.load import ChipConfig
from dspsim.sim.errors import ArgumentError, CapacityError

_ALIGN = 64  # bytes: keeps every operand aligned for any dtype and burst


def _fits(bases: list[int], nbytes: int, lo: int, hi: int) -> bool:
    spans = sorted((b, b + nbytes) for b in bases)
    inside = all(lo <= start and end <= hi for start, end in spans)
    return inside and all(a[1] <= b[0] for a, b in pairwise(spans))


def _back_to_back(count: int, nbytes: int, base: int) -> list[int]:
    stride = -(-max(nbytes, 1) // _ALIGN) * _ALIGN
    return [base + i * stride for i in range(count)]



def place_operands(config: ChipConfig, cname: CName, length: int,
                   region: str | None = None) -> dict[str, int]:
    """Addresses for each operand (inputs and output) of ``cname`` at ``length``.

    ``region`` is where a shared-storage call's operands live: the chip's DRAM level (None,
    the default, or its name, ``"ddr"``) or another of its shared levels
    (``"shared_sram"``); a private-storage call's are in its private level (``"l2"`` or
    None).
    """
    op = cname.operator
    nbytes = length * cname.dtype.itemsize
    examples = config.example_addresses
    _check_region(config, cname, region)
    if cname.storage == "shared" and region is not None and region != config.ddr.name:
        region_config = config.level(region)
        assert region_config is not None, f"{region!r} passed _check_region: it is a level"
        bases = _back_to_back(len(op.inputs) + 1, nbytes, region_config.base_address)
        where = f"{region} ({region_config.size_bytes:,} bytes)"
        if not _fits(bases, nbytes, region_config.base_address, region_config.end_address):
            raise CapacityError(
                f"{cname.name}: {len(bases)} operands of {length:,} {cname.dtype.name} elements "
                f"({nbytes:,} bytes each) do not fit in {where}; use a smaller length or DDR")
        return dict(zip(op.inputs + (op.output,), bases, strict=True))
    if cname.storage == "shared":
        dram = config.ddr
        lo, hi = dram.base_address, dram.end_address
        if examples is not None and len(examples.shared_inputs) >= len(op.inputs):
            bases = list(examples.shared_inputs[:len(op.inputs)]) + [examples.shared_output]
            if _fits(bases, nbytes, lo, hi):
                return dict(zip(op.inputs + (op.output,), bases, strict=True))
        bases = _back_to_back(len(op.inputs) + 1, nbytes, lo)
        where = f"{dram.name} ({dram.size_bytes:,} bytes)"
    else:
        lo = config.l2.base_address
        hi = lo + config.l2.size_bytes
        if examples is not None and len(examples.private) > len(op.inputs):
            bases = list(examples.private[:len(op.inputs) + 1])
            if _fits(bases, nbytes, lo, hi):
                return dict(zip(op.inputs + (op.output,), bases, strict=True))
        bases = _back_to_back(len(op.inputs) + 1, nbytes, lo)
        where = f"core 0's L2 ({config.l2.size_bytes:,} bytes)"
    if not _fits(bases, nbytes, lo, hi):
        raise CapacityError(
            f"{cname.name}: {len(bases)} operands of {length:,} {cname.dtype.name} elements "
            f"({nbytes:,} bytes each) do not fit in {where}; use a smaller length"
            + (f" or the shared-storage version {cname.name[:-2]}_s" if cname.storage == "private"
               else ""))
    return dict(zip(op.inputs + (op.output,), bases, strict=True))


def _check_region(config: ChipConfig, cname: CName, region: str | None) -> None:
    if region is None:
        return
    shared = [level.name for level in config.levels]
    private = config.l2.name
    if cname.storage == "shared" and region not in shared:
        hint = f"; for operands in L2 use {cname.name[:-2]}_p" if region == private else ""
        raise ArgumentError(f"{cname.name}: operand region {region!r} is not one of "
                            f"{', '.join(shared)}{hint}")
    if cname.storage == "private" and region != private:
        hint = (f"; for operands in {region} use {cname.name[:-2]}_s"
                if region in shared else "")
        raise ArgumentError(f"{cname.name}: a private-storage call's operands are in "
                            f"{private}, not {region!r}{hint}")


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
