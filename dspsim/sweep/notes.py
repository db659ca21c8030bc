"""Notes of what a study skips, kept short: a grid of a million invalid points must not
keep a million messages."""
from __future__ import annotations

from collections.abc import Callable


class SkippedNotes:
    """Notes of skipped combinations, the first few in full and then only counted, so that
    a grid of a million invalid points does not keep a million messages."""

    SHOWN = 5

    def __init__(self, notes: list[str]) -> None:
        self.notes = notes
        self.count = 0

    def __call__(self, note: str) -> None:
        self.count += 1
        if self.count <= self.SHOWN:
            self.notes.append(note)

    def summary(self) -> None:
        """Add one note for the skipped combinations not shown."""
        if self.count > self.SHOWN:
            self.notes.append(f"… and {self.count - self.SHOWN:,} more invalid combinations "
                              f"skipped ({self.count:,} in all)")


def some(names: list[str], shown: int = 4) -> str:
    """A short list: ``a, b, c, d, … (16 in all)``."""
    if len(names) <= shown:
        return ", ".join(names)
    return f"{', '.join(names[:shown])}, … ({len(names)} in all)"


class ChipLabels:
    """Chip labels per skip reason (a mask too wide, a dtype lacking), the first few kept
    and the rest counted; :meth:`notes` gives one note per reason."""

    def __init__(self) -> None:
        self.by_reason: dict[str, tuple[list[str], list[int], set[int]]] = {}

    def add(self, reason: str, label: str, cores: int) -> None:
        labels, counts, sizes = self.by_reason.setdefault(reason, ([], [0], set()))
        if len(labels) < 5:
            labels.append(label)
        counts[0] += 1
        sizes.add(cores)

    def notes(self, template: Callable[[str, str, bool, set[int]], str]) -> list[str]:
        return [template(reason, shown(labels, counts[0]), counts[0] == 1, sizes)
                for reason, (labels, counts, sizes) in self.by_reason.items()]


def shown(labels: list[str], count: int) -> str:
    """The first labels of ``count``, and how many there are when some are left out."""
    if count <= 4:
        return ", ".join(labels)
    return f"{', '.join(labels[:4])}, … ({count:,} in all)"
