"""Program files: a program described in YAML, validated like chip files.

::

    chip: ft78ne                    # a packaged chip or a chip file (relative to this file)
    kernels: [my_ops.py]            # optional: users' own operators (relative to this file)
    parameters:                     # named numbers; "$name" uses one; the CLI may override
      n: 65536
      mask: 0xff
    buffers:
      dy: {length: $n, init: {random: {seed: 1}}}     # placed automatically in DDR
      x:  {length: $n, address: 0xA0000000, init: {random: {seed: 2, low: -3, high: 3}}}
      dx: {length: $n}                                 # produced by a call
    streams:
      main:
        - call: fp_gelu_grad_s
          args: [dy, x, dx, $n, $mask]                 # C arguments; operands by buffer name
        - record: done
      other:
        - wait: done

Every problem is reported with the file and the key path (``streams.main[0].args[1]``),
all of them at once, before anything is placed in memory
(:func:`dspsim.programs.loader.load_program` reads and checks a file; this module holds
what it makes).
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

from dspsim.chip import Chip
from dspsim.numbers import read_int
from dspsim.programs.buffers import Buffer, buffer_spans, describe, fill, load_npy
from dspsim.programs.program import Initial, Program
from dspsim.programs.result import ProgramResult
from dspsim.sim.errors import ConfigError

#: advice in a program file's own terms, for messages that otherwise speak of Python calls
FILE_ADVICE = {
    "no calls": "add a call to a stream of the file ({call: fp_relu_grad_s, args: [...]})",
    "unwritten": "give its buffer an init (init: {random: {seed: 1}} or init: {npy: "
                 "data.npy})",
}


class ProgramFileError(ConfigError):
    """A program file with problems; the message lists each with its key path."""


@dataclass
class ProgramFile:
    """A program file loaded onto a fresh chip: its program, buffers and parameters."""

    path: str
    chip: Chip
    program: Program
    buffers: list[Buffer]
    parameters: dict[str, Any]
    description: str | None = None
    text: str = field(default="", repr=False)

    def run(self, *, numerics: bool = True, fidelity: str = "fast",
            races: str = "error") -> ProgramResult:
        """Run the program; with numerics, the initialised buffers are filled first (once
        every check has passed)."""
        initialised = [b for b in self.buffers if b.init is not None]
        base = os.path.dirname(os.path.abspath(self.path))

        def write() -> None:
            # every file is read again (it may have changed since loading) before any byte
            # is stored, so that a bad one leaves memory as it was
            data = {}
            for buffer in initialised:
                if buffer.init is not None and buffer.init.kind == "npy":
                    try:
                        data[buffer.name] = load_npy(os.path.join(base, buffer.init.file), buffer)
                    except ValueError as exc:
                        raise ProgramFileError(f"{self.path}: buffers.{buffer.name}.init.npy: "
                                               f"{exc}") from None
            for buffer in initialised:
                fill(self.chip.memory, buffer, base, data.get(buffer.name))

        memory = self.chip.memory
        initial = Initial(tuple(span for b in initialised for span in buffer_spans(memory, b)),
                          write)
        return self.program.run(numerics=numerics, fidelity=fidelity, races=races,
                                initial=initial)

    def buffer_table(self) -> list[dict[str, Any]]:
        """Every buffer as plain data (name, address, region, length, dtype, init)."""
        return [describe(b) for b in self.buffers]


def parse_value(text: str) -> int | float:
    """A parameter value from the command line: an integer (1024, 0xff, 2^16) or a number."""
    try:
        return read_int(text)
    except ValueError:  # not an integer: try a float below
        pass
    try:
        return float(text)
    except ValueError:
        raise ProgramFileError(f"parameter value {text!r} is not a number (examples: 4096, "
                               f"0x0f, 2^16, 0.5)") from None


