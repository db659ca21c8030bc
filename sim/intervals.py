"""Sets of byte intervals, kept as sorted lists: one entry per write, never per byte."""
from __future__ import annotations

import bisect
import builtins


class IntervalSet:
    """A set of disjoint half-open byte intervals, merged on insertion."""

    def __init__(self) -> None:
        self._starts: list[int] = []
        self._ends: list[int] = []

    def add(self, start: int, end: int) -> None:
        if end <= start:
            return
        i = bisect.bisect_left(self._ends, start)  # first interval that may touch
        j = bisect.bisect_right(self._starts, end)  # past the last that may touch
        if i < j:
            start = min(start, self._starts[i])
            end = max(end, self._ends[j - 1])
        self._starts[i:j] = [start]
        self._ends[i:j] = [end]

    def first_gap(self, start: int, end: int) -> tuple[int, int] | None:
        """The first sub-range of [start, end) not in the set, or None if all is covered."""
        if end <= start:
            return None
        i = bisect.bisect_right(self._starts, start) - 1
        if i >= 0 and self._ends[i] >= end:
            return None
        gap_start = start if i < 0 or self._ends[i] <= start else self._ends[i]
        nxt = bisect.bisect_right(self._starts, gap_start)
        gap_end = min(end, self._starts[nxt]) if nxt < len(self._starts) else end
        return gap_start, gap_end


class DtypeMap:
    """Which dtype each written byte range was last written as: disjoint intervals, each
    with a dtype name, neighbours of one dtype merged (one entry per write, never per
    byte)."""

    def __init__(self) -> None:
        self._starts: list[int] = []
        self._ends: list[int] = []
        self._dtypes: list[str] = []

    def set(self, start: int, end: int, dtype: str) -> None:
        if end <= start:
            return
        i = bisect.bisect_right(self._ends, start)  # first interval ending after start
        j = bisect.bisect_left(self._starts, end)  # past the last starting before end
        kept: list[tuple[int, int, str]] = []  # (start, end, dtype) of the new intervals
        if i < j and self._starts[i] < start:  # the part of the first before the new range
            kept.append((self._starts[i], start, self._dtypes[i]))
        kept.append((start, end, dtype))
        if i < j and self._ends[j - 1] > end:  # the part of the last after it
            kept.append((end, self._ends[j - 1], self._dtypes[j - 1]))
        self._starts[i:j] = [s for s, _, _ in kept]
        self._ends[i:j] = [e for _, e, _ in kept]
        self._dtypes[i:j] = [d for _, _, d in kept]
        self._merge_around(i, i + len(kept))

    def _merge_around(self, first: int, last: int) -> None:
        k = max(first - 1, 0)
        while k < min(last + 1, len(self._starts)) - 1:
            if self._ends[k] == self._starts[k + 1] and self._dtypes[k] == self._dtypes[k + 1]:
                self._ends[k] = self._ends[k + 1]
                del self._starts[k + 1], self._ends[k + 1], self._dtypes[k + 1]
                last -= 1
            else:
                k += 1

    def within(self, start: int, end: int) -> builtins.set[str]:  # set: the method above
        """The dtypes written anywhere in [start, end)."""
        i = bisect.bisect_right(self._ends, start)
        j = bisect.bisect_left(self._starts, end)
        return set(self._dtypes[i:j])
