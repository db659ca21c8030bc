"""Numbers as users write them, read the same way by commands and by files.

:func:`read_int` is the one reading of integers (``1024``, ``0xff``, ``2^22``,
``2**22``); the command line (:mod:`dspsim.cli.args`) turns its ValueError into a usage
error, program files (:mod:`dspsim.programs.file`) into a file error.
"""
from __future__ import annotations

import re

#: Largest power accepted in 2^N: more bits than any address space or mask
MAX_EXPONENT = 256


def read_int(text: str) -> int:
    """Integers as users write them: 1024, 0xff, 2^22, 2**22; a ValueError otherwise."""
    match = re.fullmatch(r"\s*(\d+)\s*(?:\^|\*\*)\s*(\d+)\s*", text)
    if match:
        base, exponent = int(match.group(1)), int(match.group(2))
        if exponent > MAX_EXPONENT and base > 1:
            raise ValueError(f"{text!r} is too large (powers up to {MAX_EXPONENT})")
        return base ** exponent
    try:
        return int(text.strip(), 0)
    except ValueError:
        raise ValueError(f"{text!r} is not an integer (examples: 1024, 0xff, 2^22)") from None
