"""What every study has in common, whatever it runs: a lazily built plan of runs.

A study is a call sweep (:mod:`dspsim.sweep.plan`: operators × chips × lengths × masks)
or a program study (:mod:`dspsim.sweep.programs`: one program file's parameters); either
may add what-if axes (``--set``) that turn a chip into variants. Both hand the one
runner (:func:`dspsim.sweep.driver.run_sweep`) a :class:`Plan`: how many runs it holds
at most, counted before any is built, and an iterator that builds them one at a time,
so that a grid of 10^9 points is refused at once instead of filling memory.

A run (:class:`Run`) names itself by a key (what the row store resumes by), may name a
run it is measured against (a call's one-core baseline), and is executed by the function
:data:`dspsim.sweep.driver.EXECUTORS` registers for its type.
"""
from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, Protocol

from dspsim.sim.errors import ArgumentError

#: Runs a study may have before it must be confirmed (``--max-runs``): at a few
#: hundredths of a second per timing-only call and a second or more per program run,
#: more is hours of work that a typing mistake should not start.
DEFAULT_MAX_RUNS = 10_000


class Run(Protocol):
    """One simulated run of a study."""

    numerics: bool

    @property
    def key(self) -> str:
        """The run's identity in the row store: a finished key is never run again."""

    def baseline(self) -> Run | None:
        """The run this one is measured against (it must run first), or None."""


@dataclass(frozen=True)
class Schema:
    """The rows one kind of study writes: its name (stored in every row, so that one folder
    never mixes kinds), the columns of rows.csv in order, and what a stored row must hold."""

    study: str
    columns: tuple[str, ...]
    required: dict[str, type]


@dataclass
class Plan:
    """The runs of a study: counted up front, built lazily.

    ``count`` and ``baselines`` bound from above the planned runs and the baseline runs
    they add (combinations a chip refuses are skipped only when built); ``shape`` says
    how the count arises. :meth:`iter_runs` builds the runs in order, appending what it
    skips to the list it is given.
    """

    schema: Schema  # which rows, which columns
    count: int
    baselines: int
    shape: str
    notes: list[str]
    make: Callable[[list[str]], Iterator[Any]] = field(repr=False)

    @property
    def study(self) -> str:
        """``call`` or ``program``."""
        return self.schema.study

    def iter_runs(self, notes: list[str]) -> Iterator[Any]:
        """Every run, built one at a time; notes of skipped combinations go to ``notes``."""
        return self.make(notes)

    @property
    def runs(self) -> list[Any]:
        """Every run, built at once (for small plans: tests, previews)."""
        return self.build()[0]

    def build(self) -> tuple[list[Any], list[str]]:
        """Every run, built at once, and every note: those of planning and those of the
        combinations skipped while building (for small plans: tests, previews)."""
        notes = list(self.notes)
        runs = list(self.iter_runs(notes))
        return runs, notes

    @property
    def total(self) -> int:
        """Planned runs and their baselines: what a study of this plan runs at most."""
        return self.count + self.baselines

    def describe(self) -> str:
        """``40 runs (20 planned + 20 one-core baselines)`` or ``6 runs``."""
        if not self.baselines:
            return f"{self.count:,} run{'s' * (self.count != 1)}"
        return (f"{self.total:,} runs ({self.count:,} planned + {self.baselines:,} one-core "
                f"baseline{'s' * (self.baselines != 1)})")

    def check_size(self, max_runs: int | None) -> None:
        """Refuse a plan above ``max_runs`` (``DEFAULT_MAX_RUNS`` if None) before it runs."""
        limit = DEFAULT_MAX_RUNS if max_runs is None else max_runs
        if limit < 1:
            raise ArgumentError(f"--max-runs {limit}: give at least 1")
        if self.total > limit:
            raise ArgumentError(
                f"this study has up to {self.describe()} ({self.shape}), more than "
                f"--max-runs {limit:,}; narrow the axes, or pass --max-runs {self.total} "
                f"to run it all")
