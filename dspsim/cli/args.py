"""Argument types shared by the command-line modules."""
from __future__ import annotations

import argparse

from dspsim.numbers import read_int


def parse_int(text: str) -> int:
    """Integers as users write them: 1024, 0xff, 2^22, 2**22 (see :mod:`dspsim.numbers`)."""
    try:
        return read_int(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def parse_seed(text: str) -> int:
    """A random seed: a non-negative integer."""
    value = parse_int(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"seed {value} must be >= 0")
    return value


def parse_length(text: str) -> int:
    """An element count: an integer as :func:`parse_int` reads it, never negative."""
    value = parse_int(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"length {value} must be >= 0 (0 does nothing)")
    return value


def int_list(text: str) -> list[int]:
    """A comma-separated list of integers: ``2^12,2^16,2^20`` or ``0x1,0x3,0xf``."""
    return [parse_int(part) for part in text.split(",") if part.strip()]


def name_list(text: str) -> list[str]:
    """A comma-separated list of names: ``relu_grad,gelu_grad``."""
    return [part.strip() for part in text.split(",") if part.strip()]


def parse_param(text: str) -> tuple[str, float]:
    """An operator parameter as ``NAME=NUMBER``."""
    name, sep, value = text.partition("=")
    try:
        if not sep or not name.strip().isidentifier():
            raise ValueError
        return name.strip(), float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"--param takes NAME=NUMBER, got {text!r}") from None


def param_dict(pairs: list[tuple[str, float]]) -> dict[str, float]:
    """``--param`` pairs as a dictionary; a name given twice is an error."""
    params: dict[str, float] = {}
    for name, value in pairs:
        if name in params:
            raise argparse.ArgumentTypeError(f"--param {name} given twice ({params[name]:g} "
                                             f"and {value:g})")
        params[name] = value
    return params


def add_kernels_option(parser) -> None:
    """``--kernels FILE`` (repeatable): users' own operators for the command."""
    parser.add_argument("--kernels", action="append", default=[], metavar="FILE",
                        help="a Python file declaring your own operators (repeatable; see "
                        "docs/custom-kernels.md); installed packages' operators are always "
                        "offered")
