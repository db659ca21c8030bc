"""The operator library's C names: ``{fp|hp|bf}_{stem}_{s|p}``, parsed and listed."""
from __future__ import annotations

import difflib
from dataclasses import dataclass
from typing import Iterable

from dspsim.kernels import activation_grads, forward, losses
from dspsim.kernels.dtypes import BY_PREFIX, DTYPES, DType
from dspsim.kernels.operator import Operator

OPERATORS: dict[str, Operator] = {
    op.stem: op
    for op in (*activation_grads.OPERATORS, *losses.OPERATORS, *forward.OPERATORS)
}
STORAGE = {"s": "shared", "p": "private"}


@dataclass(frozen=True)
class CName:
    """A parsed C name: which operator, in which dtype, in which storage version."""

    name: str
    operator: Operator
    dtype: DType
    storage: str  # "shared" or "private"

    @property
    def args(self) -> tuple[str, ...]:
        """Argument names in C order, core_mask included for the shared version."""
        return self.operator.args + (("core_mask",) if self.storage == "shared" else ())

    def signature(self) -> str:
        """The C prototype, as the operator library's reference pages write it."""
        op, element = self.operator, self.dtype.c_type
        params = {p.name: p for p in op.params}
        parts = []
        for arg in self.args:
            if arg in ("length", "core_mask"):
                parts.append(f"int {arg}")
            elif arg in params:
                c_type = element if params[arg].c_type == "element" else params[arg].c_type
                parts.append(f"{c_type} {arg}")
            else:
                parts.append(f"{element} *{arg}")
        return f"void {self.name}({', '.join(parts)})"


def c_name(operator: Operator, dtype: str, storage: str) -> str:
    suffix = {v: k for k, v in STORAGE.items()}[storage]
    return f"{DTYPES[dtype].prefix}_{operator.stem}_{suffix}"


def parse(name: str) -> CName | None:
    """Parse a C name; None if it names no operator of the library."""
    prefix, _, rest = name.partition("_")
    stem, _, suffix = rest.rpartition("_")
    if prefix not in BY_PREFIX or suffix not in STORAGE or stem not in OPERATORS:
        return None
    return CName(name, OPERATORS[stem], BY_PREFIX[prefix], STORAGE[suffix])


def names_for(dtypes: Iterable[str]) -> list[str]:
    """Every C name available on a chip with these dtypes."""
    return sorted(c_name(op, dtype, storage) for op in OPERATORS.values()
                  for dtype in dtypes if dtype in DTYPES for storage in STORAGE.values())


def closest(name: str, candidates: Iterable[str], count: int = 3) -> list[str]:
    return difflib.get_close_matches(name, list(candidates), n=count, cutoff=0.5)
