"""Printing for every command: tables that fit the terminal and never cut a number or a name.

A command makes one :class:`Output` and prints through it:

* ``out.line(...)`` prints text as given (user text is never read as markup); pass
  ``rich.text.Text`` parts for colour.
* ``out.table(columns, rows, title=...)`` prints a table. On a terminal it is fitted to the
  width: text columns wrap between words, number columns never wrap, and when even that
  is too wide the table is split into parts that repeat the ``key`` columns. Piped or
  redirected, it prints plain aligned columns, as wide as they need to be.
* ``out.json(data)`` prints JSON, never wrapped (:func:`dspsim.tables.json_text`); a
  command offers it with :func:`add_json_option`.
* ``out.progress(...)`` shows a progress bar on stderr (only when stderr is a terminal).

Cells are ``str`` (printed literally) or ``rich.text.Text`` (styled); a ``\\n`` in a cell
starts a new line within it.
"""
from __future__ import annotations

import contextlib
import errno
import os
import sys
import textwrap
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from rich import box
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table
from rich.text import Text

from dspsim.tables import csv_text, json_text

Cell = str | Text


@dataclass(frozen=True)
class Column:
    """One table column: its header, alignment, whether its cells may wrap between words,
    and whether it identifies a row (repeated in every part of a split table)."""

    header: str
    justify: str = "right"  # numbers right, text left
    wrap: bool = False  # True for text: cells wrap between words, never inside one
    key: bool = False


def text_column(header: str, key: bool = False) -> Column:
    """A left-aligned column of text that may wrap between words."""
    return Column(header, justify="left", wrap=True, key=key)


def number_column(header: str, key: bool = False) -> Column:
    """A right-aligned column whose cells are never wrapped."""
    return Column(header, justify="right", wrap=False, key=key)


def add_json_option(parser, what: str, detail: str = "") -> None:
    """The ``--json`` flag every command offers: print ``what`` as JSON instead of tables
    (through :meth:`Output.json`)."""
    extra = f" ({detail})" if detail else ""
    parser.add_argument("--json", action="store_true", help=f"print {what} as JSON{extra}")


class PipedConsole(Console):
    """A rich console that lets a closed stdout reach the command's caller.

    rich's own answer to a reader that left (``dspsim run ... | head``) is to raise
    SystemExit(1) from inside the print; the command line instead ends such a command
    quietly with status 0 (:func:`dspsim.cli.main.main`), so the pipe error is passed on.
    """

    def on_broken_pipe(self) -> None:
        raise BrokenPipeError(errno.EPIPE, os.strerror(errno.EPIPE))


def _plain(cell: Cell) -> str:
    return cell.plain if isinstance(cell, Text) else str(cell)


def _lines(cell: Cell) -> list[str]:
    return _plain(cell).split("\n")


def _longest_word(text: str) -> int:
    return max((len(word) for line in text.split("\n") for word in line.split()), default=0)


def _natural(cell: Cell) -> int:
    return max(len(line) for line in _lines(cell))


class Output:
    """Where a command prints: a terminal (rich, fitted) or a pipe or file (plain)."""

    def __init__(self, file=None, stderr_file=None) -> None:
        probe = PipedConsole(file=file)
        self.is_terminal = probe.is_terminal
        if self.is_terminal:
            self.console = probe
        else:  # a pipe or a file: no colour, no wrapping, nothing cut
            self.console = PipedConsole(file=file, soft_wrap=True, no_color=True, highlight=False,
                                   markup=False, emoji=False, width=10_000)
        self.errors = Console(file=stderr_file or sys.stderr, highlight=False)

    @property
    def width(self) -> int:
        return self.console.width

    # ------------------------------------------------------------------ text
    def line(self, *parts: Cell | tuple[str, str], style: str | None = None) -> None:
        """Print ``parts`` side by side as one paragraph, literally; a ``(text, style)``
        pair is styled text."""
        text = Text.assemble(*parts, style=style or "")
        self.console.print(text, highlight=False, markup=False, emoji=False)

    def error(self, message: str) -> None:
        """One line on stderr: ``error: <message>``."""
        self.errors.print(Text.assemble(("error:", "red"), " ", message), highlight=False,
                          markup=False, emoji=False, soft_wrap=not self.errors.is_terminal)

    def json(self, data) -> None:
        """``data`` as indented JSON on stdout (NaN and infinity are not JSON: None)."""
        self.console.file.write(json_text(data))
        self.console.file.flush()

    def csv(self, rows: Sequence[dict]) -> None:
        """``rows`` (dicts with the same keys, in order) as CSV on stdout, a header first."""
        self.console.file.write(csv_text(rows))
        self.console.file.flush()

    @contextlib.contextmanager
    def progress(self, description: str, total: int | None = None) -> Iterator:
        """A progress bar on stderr; yields ``advance(description, done, total)``."""
        if not self.errors.is_terminal:
            yield lambda *args: None
            return
        with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                      TimeElapsedColumn(), console=self.errors, transient=True) as bar:
            task = bar.add_task(description, total=total)

            def advance(text: str, done: int, whole: int | None) -> None:
                bar.update(task, description=text, completed=done, total=whole)
            yield advance

    # ------------------------------------------------------------------ tables
    def table(self, columns: Sequence[Column], rows: Sequence[Sequence[Cell]], *,
              title: str | None = None, show_header: bool = True, boxed: bool = True,
              row_lines: bool = False, row_styles: Sequence[str | None] | None = None) -> None:
        """Print a table that fits (terminal) or plain columns (pipe); see the module."""
        rows = [list(r) for r in rows]
        if not self.is_terminal:
            self._plain_table(columns, rows, title, show_header, row_lines)
            return
        parts = _split(columns, rows, self.width, show_header, boxed)
        if parts is None:  # narrower than a single column: plain lines, the terminal wraps
            self._plain_table(columns, rows, title, show_header, row_lines)
            return
        for number, (indices, widths) in enumerate(parts, 1):
            suffix = f" ({number}/{len(parts)})" if len(parts) > 1 else ""
            table = Table(title=Text(title + suffix) if title else None, title_justify="left",
                          show_header=show_header, box=box.HEAVY_HEAD if boxed else None,
                          pad_edge=boxed, show_edge=boxed, show_lines=row_lines)
            for i in indices:
                table.add_column(_header(columns[i].header, widths[i]), justify=columns[i].justify,
                                 width=widths[i], overflow="fold",
                                 no_wrap=not columns[i].wrap)
            for r, row in enumerate(rows):
                style = row_styles[r] if row_styles else None
                table.add_row(*(_as_text(row[i]) for i in indices), style=style)
            self.console.print(table)

    def _plain_table(self, columns, rows, title, show_header, row_lines=False) -> None:
        if title:
            self.console.print(Text(title), markup=False)
        header = [[c.header] for c in columns] if show_header else None
        body = [[_lines(cell) for cell in row] for row in rows]
        widths = [max([len(c.header) if show_header else 0]
                      + [len(line) for row in body for line in row[i]]) for i, c in
                  enumerate(columns)]
        for number, cells in enumerate(([header] if header else []) + body):
            if row_lines and number:  # rows of several lines: a blank line between them
                self.console.print("")
            height = max(len(c) for c in cells)
            for k in range(height):
                parts = []
                for i, column in enumerate(columns):
                    text = cells[i][k] if k < len(cells[i]) else ""
                    parts.append(text.rjust(widths[i]) if column.justify == "right"
                                 else text.ljust(widths[i]))
                self.console.print(Text("  ".join(parts).rstrip()), markup=False)


def _header(header: str, width: int) -> Text:
    """A header folded between words to ``width``, so that a column of short numbers
    never cuts its name (rich does not wrap the header of a no-wrap column)."""
    return Text("\n".join(textwrap.wrap(header, width, break_long_words=False)) or header)


def _as_text(cell: Cell) -> Text:
    return cell if isinstance(cell, Text) else Text(str(cell))


def _split(columns: Sequence[Column], rows, width: int, show_header: bool, boxed: bool):
    """Groups of column indices, each with a content width per column, that fit ``width``.

    Each column gets its natural width; when the whole does not fit, wrapping columns
    shrink toward their longest word; when that does not fit either, the columns are
    split into parts that each repeat the key columns. None if one column cannot fit.
    """
    natural, minimum = [], []
    for i, column in enumerate(columns):
        cells = [row[i] for row in rows]
        header_natural = len(column.header) if show_header else 0
        header_word = _longest_word(column.header) if show_header else 0
        widest = max([_natural(c) for c in cells] + [header_natural, 1])
        natural.append(widest)
        if column.wrap:
            minimum.append(max([_longest_word(_plain(c)) for c in cells] + [header_word, 1]))
        else:
            minimum.append(max([_natural(c) for c in cells] + [header_word, 1]))

    def overhead(count: int) -> int:  # padding of 1 on each side, borders between and around
        return 2 * count + ((count - 1) + 2 if boxed else 0)

    def fitted(indices: list[int]) -> dict[int, int] | None:
        widths = {i: natural[i] for i in indices}
        room = width - overhead(len(indices))
        excess = sum(widths.values()) - room
        while excess > 0:  # shrink the widest wrapping column that can still shrink
            shrinkable = [i for i in indices if widths[i] > minimum[i]]
            if not shrinkable:
                return None
            widest = max(shrinkable, key=lambda i: widths[i])
            others = [widths[i] for i in shrinkable if i != widest] + [minimum[widest]]
            step = min(excess, widths[widest] - max(max(others), minimum[widest]) or 1)
            widths[widest] -= step
            excess -= step
        return widths

    keys = [i for i, c in enumerate(columns) if c.key]
    everything = list(range(len(columns)))
    whole = fitted(everything)
    if whole is not None:
        return [(everything, whole)]
    parts, current = [], list(keys)
    for i in everything:
        if i in keys:
            continue
        if fitted(current + [i]) is not None:
            current.append(i)
            continue
        if len(current) == len(keys):  # not even this column beside the keys
            return None
        parts.append(current)
        current = keys + [i]
        if fitted(current) is None:
            return None
    parts.append(current)
    return [(sorted(p), fitted(sorted(p))) for p in parts]
