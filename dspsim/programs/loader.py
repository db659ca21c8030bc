"""Reading a program file: every section checked, every problem reported with its key
path (``streams.main[0].args[1]``), all at once, before anything is placed in memory. The
file's format is described in :mod:`dspsim.programs.file`.
"""
from __future__ import annotations

import contextlib
import os
import re
from typing import Any

from dspsim import kernels
from dspsim.chip import Chip
from dspsim.programs.buffers import Buffer, Init, init_fits, load_npy, parse_init, place
from dspsim.programs.calls import enqueue_items, unknown_call_keys
from dspsim.programs.file import FILE_ADVICE, ProgramFile, ProgramFileError
from dspsim.programs.program import Program
from dspsim.sim.chip.load import ChipConfig
from dspsim.sim.chip.yamlfile import parse_yaml, read_yaml_text
from dspsim.sim.errors import ConfigError, DspSimError, KernelDeclarationError

_TOP = ("chip", "description", "kernels", "parameters", "buffers", "streams")
_BUFFER = ("length", "dtype", "address", "region", "init")
_PARAM = re.compile(r"\$([A-Za-z_][A-Za-z0-9_]*)")
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.-]*")
#: lengths, addresses and seeds beyond this are typing mistakes, whatever the chip
MAX_WHOLE = 1 << 63


def load_program(path: str | os.PathLike, overrides: dict[str, Any] | None = None, *,
                 kernels=None, chip: ChipConfig | None = None) -> ProgramFile:
    """Read, validate and load a program file onto a fresh chip.

    ``overrides`` replace parameters of the file (each must exist there). ``kernels`` adds
    users' own operators (kernel files, as ``Chip(kernels=...)`` takes them) to those the
    file's ``kernels:`` list names (paths relative to the program file). ``chip``, a
    description to load onto instead of the file's own chip (a what-if variant of it,
    say). Raises
    ProgramFileError listing every problem with its key path; nothing is written to the
    chip's memory (buffers are filled by :meth:`ProgramFile.run`).
    """
    path = os.fspath(path)
    if not os.path.isfile(path):
        raise ProgramFileError(f"program file {path!r} does not exist or is not a file")
    text = read_yaml_text(path, "a program file")
    try:
        raw = parse_yaml(text, path, "a program file")
    except ConfigError as exc:  # the YAML parser's messages span lines: the CLI prints one
        raise ProgramFileError(" ".join(str(exc).split())) from None
    return _Loader(path, text, raw, overrides or {}, kernels, chip).load()


class _Loader:
    def __init__(self, path: str, text: str, raw: Any, overrides: dict[str, Any],
                 kernels=None, chip: ChipConfig | None = None) -> None:
        self.path, self.text, self.raw, self.overrides = path, text, raw, overrides
        self.given_kernels = kernels
        self.chip_config = chip
        self.problems: list[str] = []

    def fail_if_any(self) -> None:
        if self.problems:
            count = len(self.problems)
            raise ProgramFileError(f"{self.path}: {count} problem{'s' * (count > 1)}: "
                                   + "; ".join(self.problems))

    def problem(self, where: str, message: str) -> None:
        self.problems.append(f"{where}: {message}")

    # ------------------------------------------------------------------ top level
    def load(self) -> ProgramFile:
        raw = self.raw
        if not isinstance(raw, dict):
            raise ProgramFileError(f"{self.path}: <top level>: must be a mapping with keys "
                                   f"{', '.join(_TOP)}")
        for key in sorted(set(raw) - set(_TOP), key=str):
            self.problem(str(key), f"unknown key; allowed keys: {', '.join(_TOP)}")
        for key in ("chip", "buffers", "streams"):
            if raw.get(key) is None:
                self.problem(key, "missing key")
        # independent sections are all checked, so that one run reports every problem;
        # a section that needs another (buffers need the chip) waits for it
        description = raw.get("description")
        if description is not None and not isinstance(description, str):
            self.problem("description", f"must be text, got {description!r}")
        self.params = self.parameters(raw.get("parameters"))
        kernel_files = self.kernel_files(raw.get("kernels"))
        chip = (self.chip(raw["chip"], kernel_files) if raw.get("chip") is not None
                else None)
        if chip is None:
            self.fail_if_any()
        assert chip is not None, "a chip that could not be loaded leaves a problem"
        before = len(self.problems)
        buffers = self.buffers(raw["buffers"], chip) if raw.get("buffers") is not None else []
        streams = raw.get("streams")
        if len(self.problems) > before or raw.get("buffers") is None:
            if streams is not None:  # without buffers, calls cannot be checked: their keys can
                unknown_call_keys(self, streams)
            self.fail_if_any()
        program = chip.program()
        program.advice.update(FILE_ADVICE)
        if streams is not None:
            unknown_call_keys(self, streams)
            self.streams(streams, program, {b.name: b for b in buffers})
        self.fail_if_any()
        return ProgramFile(self.path, chip, program, buffers, self.params, description,
                           self.text)

    def parameters(self, node: Any) -> dict[str, Any]:
        params: dict[str, Any] = {}
        if node is not None and not isinstance(node, dict):
            self.problem("parameters", f"must be a mapping of names to numbers, got {node!r}")
            node = {}
        for name, value in (node or {}).items():
            if not isinstance(name, str) or not _NAME.fullmatch(name):
                self.problem(f"parameters.{name}", "a parameter name is letters, digits and _")
            elif isinstance(value, bool) or not isinstance(value, (int, float)):
                hint = ""
                with contextlib.suppress(TypeError, ValueError):  # YAML 1.1 reads 1e300
                    hint = f"; YAML reads it as text, write {float(value):e}"  # as text
                self.problem(f"parameters.{name}", f"must be a number, got {value!r}{hint}")
            else:
                params[name] = value
        for name, value in self.overrides.items():
            if name not in params:
                known = ", ".join(params) or "none"
                self.problems.append(f"parameter {name!r} given on the command line is not "
                                     f"in the file's parameters ({known})")
            else:
                params[name] = value
        return params

    def value(self, node: Any, where: str) -> Any:
        """``node`` with a "$name" parameter reference replaced by its value."""
        if isinstance(node, str) and node.startswith("$"):
            match = _PARAM.fullmatch(node)
            if match is None or match.group(1) not in self.params:
                known = ", ".join(f"${p}" for p in self.params) or "none defined"
                self.problem(where, f"unknown parameter {node!r}; parameters: {known}")
                return None
            return self.params[match.group(1)]
        return node

    def integer(self, node: Any, where: str, *, minimum: int = 0) -> int | None:
        value = self.value(node, where)
        if value is None and node is not None and str(node).startswith("$"):
            return None
        if isinstance(value, float) and value.is_integer() and abs(value) <= MAX_WHOLE:
            value = int(value)
        if (isinstance(value, bool) or not isinstance(value, int) or value < minimum
                or value > MAX_WHOLE):
            shown = f"{value:.6g}" if isinstance(value, (int, float)) else repr(value)
            self.problem(where, f"must be a whole number from {minimum} to 2^63, got {shown}")
            return None
        return value

    def kernel_files(self, node: Any) -> list:
        """The kernel files of ``kernels:`` (relative to the program file), then those
        given by the caller."""
        files: list = []
        if node is not None:
            if isinstance(node, str):
                node = [node]
            if not isinstance(node, list) or not all(isinstance(n, str) and n for n in node):
                self.problem("kernels", f"must be a list of kernel files (Python), got {node!r}")
                node = []
            folder = os.path.dirname(os.path.abspath(self.path))
            files = [os.path.join(folder, n) for n in node]
        given = self.given_kernels
        if given is not None:
            files.extend([given] if isinstance(given, (str, os.PathLike)) else list(given))
        return files

    def chip(self, node: Any, kernels=None) -> Chip | None:
        if not isinstance(node, str) or not node:
            self.problem("chip", f"must be a chip name or chip file, got {node!r}")
            return None
        name = node
        if name.endswith((".yaml", ".yml")) or os.sep in name:
            name = os.path.join(os.path.dirname(os.path.abspath(self.path)), name)
        try:
            return Chip(self.chip_config or name, kernels=kernels or None)
        except KernelDeclarationError as exc:
            self.problem("kernels", str(exc))
            return None
        except DspSimError as exc:
            self.problem("chip", str(exc))
            return None

    # ------------------------------------------------------------------ buffers
    def buffers(self, node: Any, chip: Chip) -> list[Buffer]:
        if not isinstance(node, dict) or not node:
            self.problem("buffers", "must be a non-empty mapping of buffer names to "
                         "{length, dtype, address, region, init}")
            return []
        buffers, where = [], {}
        before = len(self.problems)
        for name, spec in node.items():
            at = f"buffers.{name}"
            if not isinstance(name, str) or not _NAME.fullmatch(name):
                self.problem(at, "a buffer name is letters, digits, _, . and -")
                continue
            buffer = self.buffer(name, spec, at, chip)
            if buffer is not None:
                buffers.append(buffer)
                where[name] = at
        if len(self.problems) == before:
            place(buffers, chip.config, chip.memory, where, self.problems)
        return buffers

    def buffer(self, name: str, spec: Any, at: str, chip: Chip) -> Buffer | None:
        if not isinstance(spec, dict):
            self.problem(at, f"must be a mapping with keys {', '.join(_BUFFER)}, got {spec!r}")
            return None
        before = len(self.problems)
        for key in sorted(set(spec) - set(_BUFFER), key=str):
            self.problem(f"{at}.{key}", f"unknown key; allowed keys: {', '.join(_BUFFER)}")
        length = self.integer(spec.get("length"), f"{at}.length")
        dtype = spec.get("dtype", "fp32")
        if dtype not in chip.config.dtypes or dtype not in kernels.DTYPES:
            self.problem(f"{at}.dtype", f"{dtype!r} is not a dtype of {chip.name}; use one of "
                         f"{', '.join(chip.config.dtypes)}")
            dtype = None
        address = None
        if spec.get("address") is not None:
            address = self.integer(spec["address"], f"{at}.address")
        region = spec.get("region", chip.config.ddr.name)
        # a buffer is placed automatically in any level every core reaches
        regions = [r.name for r in chip.config.shared_regions]
        if region not in regions:
            self.problem(f"{at}.region", f"{region!r} is not a region buffers are placed in; "
                         f"use one of {', '.join(regions)}, or give an address")
        elif "region" in spec and "address" in spec:
            self.problem(f"{at}.region", "give an address or a region, not both")
        init = self.init(spec.get("init"), f"{at}.init")
        if length is None or dtype is None or len(self.problems) > before:
            return None
        if init is not None and not init_fits(self, init, dtype, f"{at}.init"):
            return None
        buffer = Buffer(name, length, dtype, address, region, init)
        if init is not None and init.kind == "npy":
            base = os.path.dirname(os.path.abspath(self.path))
            try:
                load_npy(os.path.join(base, init.file), buffer)
            except ValueError as exc:
                self.problem(f"{at}.init.npy", str(exc))
        return buffer

    def init(self, node: Any, at: str) -> Init | None:
        return parse_init(self, node, at)

    # ------------------------------------------------------------------ streams
    def streams(self, node: Any, program: Program, buffers: dict[str, Buffer]) -> None:
        if not isinstance(node, dict) or not node:
            self.problem("streams", "must be a non-empty mapping of stream names to lists of "
                         "calls, records and waits")
            return
        enqueue_items(self, node, program, buffers)
