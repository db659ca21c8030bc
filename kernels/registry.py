"""The operator library's C names: ``{fp|hp|bf}_{stem}_{s|p}``, parsed and listed.

A :class:`KernelSet` is the operators one chip offers: the library's own, those installed
packages declare, and a user's kernel files (see :mod:`dspsim.kernels.loading`). The
module-level functions speak of the library's own operators.
"""
from __future__ import annotations

import difflib
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Literal

from dspsim.kernels import activation_grads, forward, losses
from dspsim.kernels.dtypes import BY_PREFIX, DTYPES, DType
from dspsim.kernels.operator import Operator
from dspsim.sim.errors import KernelDeclarationError

OPERATORS: dict[str, Operator] = {
    op.stem: op
    for op in (*activation_grads.OPERATORS, *losses.OPERATORS, *forward.OPERATORS)
}
#: where a call's operands live: shared storage (any cores) or one core's private memory
StorageKind = Literal["shared", "private"]
STORAGE: dict[str, StorageKind] = {"s": "shared", "p": "private"}


@dataclass(frozen=True)
class CName:
    """A parsed C name: which operator, in which dtype, in which storage version."""

    name: str
    operator: Operator
    dtype: DType
    storage: StorageKind

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
    suffixes: dict[str, str] = {v: k for k, v in STORAGE.items()}
    suffix = suffixes[storage]
    return f"{DTYPES[dtype].prefix}_{operator.stem}_{suffix}"


class KernelSet(Mapping[str, Operator]):
    """Operators by stem, and their C names: what one chip offers.

    Immutable: :meth:`extended` makes a new set, so that the kernels one chip loads are
    never seen by another.
    """

    def __init__(self, operators: Iterable[Operator], origins: Mapping[str, str] | None = None,
                 sources: tuple = ()):
        by_stem: dict[str, Operator] = {}
        for op in operators:
            by_stem[op.stem] = op
        self._operators = MappingProxyType(by_stem)
        #: where each operator not of the library was declared (a file, an entry point)
        self.origins = MappingProxyType(dict(origins or {}))
        #: the kernel files' texts (dspsim.kernels.loading.KernelSource) that declared them,
        #: so that another process can rebuild this set
        self.sources = tuple(sources)

    def __getitem__(self, stem: str) -> Operator:
        return self._operators[stem]

    def __iter__(self) -> Iterator[str]:
        return iter(self._operators)

    def __len__(self) -> int:
        return len(self._operators)

    def __repr__(self) -> str:
        own = [s for s in self if s in self.origins]
        return f"KernelSet({len(self)} operators{', own: ' + ', '.join(own) if own else ''})"

    def extended(self, operators: Iterable[Operator], origin: str,
                 source=None) -> KernelSet:
        """This set plus ``operators`` declared in ``origin``; a KernelDeclarationError if a
        stem is already taken (by the library or by another file)."""
        added = list(operators)
        for op in added:
            taken = self._operators.get(op.stem)
            if taken is not None and taken is not op:
                where = self.origins.get(op.stem, "the operator library")
                raise KernelDeclarationError(
                    f"{origin}: operator {op.stem!r}: field stem: {op.stem!r} is already "
                    f"declared by {where}; choose another stem")
        origins = {**self.origins, **{op.stem: origin for op in added}}
        sources = self.sources + ((source,) if source is not None and
                                  source not in self.sources else ())
        return KernelSet([*self._operators.values(), *added], origins, sources)

    def parse_known(self, name: str) -> CName:
        """Parse a C name already checked to name an operator of this set (any dtype)."""
        cname = self.parse(name, any_dtype=True)
        assert cname is not None, f"{name!r} names no operator of this set"
        return cname

    def parse(self, name: str, *, any_dtype: bool = False) -> CName | None:
        """Parse a C name; None if it names no operator of this set, or (unless
        ``any_dtype``) one in a dtype the operator is not written for."""
        if not isinstance(name, str):
            return None
        prefix, _, rest = name.partition("_")
        stem, _, suffix = rest.rpartition("_")
        op = self._operators.get(stem)
        if prefix not in BY_PREFIX or suffix not in STORAGE or op is None or \
                not (any_dtype or op.supports(BY_PREFIX[prefix].name)):
            return None
        return CName(name, op, BY_PREFIX[prefix], STORAGE[suffix])

    def names_for(self, dtypes: Iterable[str]) -> list[str]:
        """Every C name available on a chip with these dtypes."""
        dtypes = list(dtypes)
        return sorted(c_name(op, dtype, storage) for op in self._operators.values()
                      for dtype in dtypes if dtype in DTYPES and op.supports(dtype)
                      for storage in STORAGE.values())


#: The operator library's own operators.
LIBRARY = KernelSet(OPERATORS.values())


def parse(name: str) -> CName | None:
    """Parse a C name; None if it names no operator of the library."""
    return LIBRARY.parse(name)


def names_for(dtypes: Iterable[str]) -> list[str]:
    """Every C name of the library available on a chip with these dtypes."""
    return LIBRARY.names_for(dtypes)


def closest(name: str, candidates: Iterable[str], count: int = 3) -> list[str]:
    return difflib.get_close_matches(name, list(candidates), n=count, cutoff=0.5)
