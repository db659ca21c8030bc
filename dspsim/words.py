"""Counts in words, as every message and report writes them: ``1 tile``, ``4,096 tiles``."""
from __future__ import annotations


def count(number: int | float, noun: str, plural: str | None = None) -> str:
    """``number`` with thousands separators and ``noun`` in the singular for exactly one,
    else ``plural`` (default: ``noun`` + "s")."""
    shown = f"{number:,}" if isinstance(number, int) or float(number).is_integer() \
        else f"{number:,.3g}"
    if isinstance(number, float) and number.is_integer():
        shown = f"{int(number):,}"
    return f"{shown} {noun if number == 1 else (plural or noun + 's')}"
