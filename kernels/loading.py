"""Users' own operators: loaded from a Python file or from an installed package.

A kernel file declares operators exactly as the library does (:class:`Operator`,
:class:`Param`) and lists them in ``OPERATORS`` (or simply defines them at module level).
A package offers its operators through the entry-point group ``dspsim.kernels``: an entry
point names a module (read as a kernel file is), an Operator, an iterable of them, or a
function returning one of those.

A file travels as a :class:`KernelSource`, its text, so that a sweep's workers rebuild the
same operators without access to the user's files. Loading runs the text once per
distinct text (cached, under a lock: threads may load at once) and checks every
declaration, formulas included; nothing is registered globally, so one chip's kernels
are never another's (see :func:`kernel_set`).
"""
from __future__ import annotations

import hashlib
import os
import sys
import threading
import traceback
import types
from collections.abc import Iterable
from dataclasses import dataclass
from importlib import metadata

from dspsim.kernels.declaration import probe_formulas
from dspsim.kernels.operator import Operator
from dspsim.kernels.registry import LIBRARY, KernelSet
from dspsim.sim.chip.textfile import read_small_text
from dspsim.sim.errors import KernelDeclarationError

#: The entry-point group through which installed packages offer operators.
ENTRY_POINT_GROUP = "dspsim.kernels"
#: Largest kernel file read: declarations are small; data belongs elsewhere.
MAX_KERNEL_FILE_BYTES = 1 << 20

_lock = threading.RLock()
_loaded: dict[str, tuple[Operator, ...]] = {}
_installed: KernelSet | None = None


@dataclass(frozen=True)
class KernelSource:
    """A kernel file as text: where it came from (for messages) and what it says."""

    origin: str
    text: str

    @property
    def digest(self) -> str:
        return hashlib.sha256(self.text.encode("utf-8", "surrogatepass")).hexdigest()

    @classmethod
    def from_path(cls, path: str | os.PathLike) -> KernelSource:
        """The file at ``path``; a KernelDeclarationError if it is no readable text file."""
        path = os.fspath(path)
        if not os.path.exists(path):
            raise KernelDeclarationError(f"{path}: no such kernel file; give a Python file that "
                                         f"declares operators (see docs/custom-kernels.md)")
        text = read_small_text(path, limit=MAX_KERNEL_FILE_BYTES, what="a Python file that "
                               "declares operators", too_large="a kernel file holds "
                               "declarations only", error=KernelDeclarationError)
        return cls(path, text)


def _where(exc: BaseException, origin: str) -> str:
    """``origin:line`` of the deepest frame of ``exc`` in the kernel file."""
    line = getattr(exc, "lineno", None) if isinstance(exc, SyntaxError) else None
    for frame in traceback.extract_tb(exc.__traceback__):
        if frame.filename == origin:
            line = frame.lineno
    return f"{origin}:{line}" if line else origin


def operators_of(namespace, origin: str) -> tuple[Operator, ...]:
    """The operators a module (or any object with attributes) declares: its ``OPERATORS``,
    or else every Operator at its top level, in order."""
    if hasattr(namespace, "OPERATORS"):
        declared = namespace.OPERATORS
        if isinstance(declared, Operator):
            declared = (declared,)
        try:
            declared = tuple(declared)
        except TypeError:
            raise KernelDeclarationError(f"{origin}: OPERATORS must be a tuple of Operator, "
                                         f"got {type(declared).__name__}") from None
        for index, op in enumerate(declared):
            if not isinstance(op, Operator):
                raise KernelDeclarationError(
                    f"{origin}: OPERATORS[{index}] is {type(op).__name__}, not a "
                    f"dspsim.kernels.Operator")
    else:
        declared = tuple(v for v in vars(namespace).values() if isinstance(v, Operator))
    if not declared:
        raise KernelDeclarationError(f"{origin}: declares no operator; build "
                                     f"dspsim.kernels.Operator(...) and list it in OPERATORS")
    stems = [op.stem for op in declared]
    twice = next((s for s in stems if stems.count(s) > 1), None)
    if twice is not None:
        raise KernelDeclarationError(f"{origin}: operator {twice!r}: field stem: declared twice")
    for op in declared:
        try:
            probe_formulas(op)
        except KernelDeclarationError as exc:
            raise KernelDeclarationError(f"{origin}: {exc}") from exc.__cause__
    return declared


def load_source(source: KernelSource) -> tuple[Operator, ...]:
    """The operators ``source`` declares, checked; each distinct text runs once."""
    digest = source.digest
    with _lock:
        if digest in _loaded:
            return _loaded[digest]
        name = f"dspsim_user_kernels_{digest[:16]}"
        module = types.ModuleType(name)
        module.__file__ = source.origin
        # registered while it runs and after: dataclasses and pickling look modules up here
        sys.modules[name] = module
        try:
            code = compile(source.text, source.origin, "exec")
            exec(code, module.__dict__)  # noqa: S102 - the user's own kernel declarations
        except KernelDeclarationError as exc:
            del sys.modules[name]
            raise KernelDeclarationError(f"{_where(exc, source.origin)}: {exc}") from None
        except Exception as exc:  # whatever the file raises is reported where it happened
            del sys.modules[name]
            raise KernelDeclarationError(
                f"{_where(exc, source.origin)}: loading the kernel file raised "
                f"{type(exc).__name__}: {str(exc)[:300]}") from None
        try:
            operators = operators_of(module, source.origin)
        except KernelDeclarationError:
            del sys.modules[name]
            raise
        _loaded[digest] = operators
        return operators


def _entry_point_operators(entry) -> tuple[Operator, ...]:
    origin = f"entry point {entry.name!r} ({entry.value}) of group {ENTRY_POINT_GROUP}"
    try:
        target = entry.load()
        if callable(target) and not isinstance(target, (Operator, type)):
            target = target()
    except Exception as exc:  # an installed package's problem, reported with its name
        raise KernelDeclarationError(f"{origin}: loading it raised {type(exc).__name__}: "
                                     f"{str(exc)[:300]}; fix or uninstall the package") from None
    if isinstance(target, Operator):
        return operators_of(types.SimpleNamespace(OPERATORS=(target,)), origin)
    if isinstance(target, types.ModuleType):
        return operators_of(target, origin)
    return operators_of(types.SimpleNamespace(OPERATORS=target), origin)


def installed_kernels() -> KernelSet:
    """The library's operators and those of installed packages' ``dspsim.kernels`` entry
    points (read once per process)."""
    global _installed
    with _lock:
        if _installed is None:
            found = LIBRARY
            for entry in sorted(metadata.entry_points(group=ENTRY_POINT_GROUP),
                                key=lambda e: e.name):
                found = found.extended(_entry_point_operators(entry),
                                       f"entry point {entry.name!r}")
            _installed = found
        return _installed


def kernel_sources(spec) -> tuple[KernelSource, ...]:
    """The files of a ``kernels=`` value as sources (Operators and sets contribute none)."""
    if spec is None or isinstance(spec, (Operator, KernelSet)):
        return ()
    if isinstance(spec, KernelSource):
        return (spec,)
    if isinstance(spec, (str, os.PathLike)):
        return (KernelSource.from_path(spec),)
    try:
        items = list(spec)
    except TypeError:
        raise KernelDeclarationError(
            f"kernels={spec!r:.60} must be a kernel file's path, an Operator, or a list of "
            f"them") from None
    return tuple(s for item in items for s in kernel_sources(item))


def kernel_set(spec=None) -> KernelSet:
    """The operators a chip offers: installed ones plus ``spec`` (a kernel file's path, a
    KernelSource, an Operator, a KernelSet, or a list of those)."""
    if isinstance(spec, KernelSet):
        return spec
    found = installed_kernels()
    if spec is None:
        return found
    items = [spec] if isinstance(spec, (str, os.PathLike, KernelSource, Operator)) else None
    if items is None:
        try:
            items = list(spec)
        except TypeError:
            raise KernelDeclarationError(
                f"kernels={spec!r:.60} must be a kernel file's path, an Operator, or a list "
                f"of them") from None
    for item in items:
        if isinstance(item, Operator):
            probe_formulas(item)
            found = found.extended([item], "Python code")
        elif isinstance(item, KernelSet):
            found = found.extended([item[s] for s in item if s in item.origins],
                                   "another kernel set")
            for source in item.sources:
                found = found.extended((), source.origin, source)
        else:
            for source in kernel_sources(item):
                found = found.extended(load_source(source), source.origin, source)
    return found


def declared_in(found: KernelSet) -> Iterable[str]:
    """The stems of ``found`` that are not the library's own."""
    return [stem for stem in found if stem in found.origins]
