"""What every figure of dspsim shares: matplotlib on demand, styles, legends, file names.

The figures themselves live with what they show: scaling studies in
:mod:`dspsim.sweep.scaling_plot`, what-if studies in :mod:`dspsim.sweep.whatif_plot`, the
Gantt chart of a trace in :mod:`dspsim.traces.plot`. matplotlib is imported on first use
with the Agg backend, so the command line starts fast and plotting works without a
display.
"""
from __future__ import annotations

import io
import math
import os
from collections.abc import Iterable
from typing import Any

from dspsim.atomic import as_path, check_target, write_atomically
from dspsim.sim.errors import ArgumentError

Row = dict[str, Any]
MAX_COLUMNS = 3


def pyplot():
    """matplotlib.pyplot on the Agg backend (files only, no display needed)."""
    import matplotlib  # noqa: PLC0415 - heavy; only plotting needs it

    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt  # noqa: PLC0415

    return plt


def length_label(length: int) -> str:
    """2^20 (1,048,576) for powers of two, else 1,000,000."""
    if length > 0 and length & (length - 1) == 0:
        return f"2^{length.bit_length() - 1} ({length:,})"
    return f"{length:,}"


def slug(text: str) -> str:
    return "".join(c if c.isalnum() or c in "-_" else "-" for c in text.lower())


def figure_grid(plt, count: int, title: str):
    columns = min(count, MAX_COLUMNS)
    lines = math.ceil(count / columns)
    fig, axes = plt.subplots(lines, columns, figsize=(5.2 * columns + 1.2, 4.3 * lines + 1.1),
                             squeeze=False, layout="constrained")
    for ax in axes.flat[count:]:
        ax.set_visible(False)
    fig.suptitle(title, fontsize=12)
    return fig, list(axes.flat[:count])


def line_color(plt, index: int):
    """Distinct colours for up to ten lines (lengths or core counts)."""
    return plt.get_cmap("tab10")(index % 10)


MARKERS = "osD^vP*X"


def line_style(plt, index: int) -> dict:
    """Colour, marker and shrinking marker size, so that coinciding lines stay visible."""
    return {"color": line_color(plt, index), "marker": MARKERS[index % len(MARKERS)],
            "markersize": max(4.0, 9.0 - 1.6 * index), "linestyle": "-"}


#: the image formats a figure is written in, by the file name's ending
IMAGE_FORMATS = {".png": "png", ".svg": "svg", ".pdf": "pdf"}


def image_format(path, what: str = "plot") -> str:
    """The format a figure named ``path`` is written in; an ArgumentError for a name
    whose ending is none of .png, .svg and .pdf (never PNG bytes under another name)."""
    shown = as_path(path, what)
    ending = os.path.splitext(shown)[1]
    if ending.lower() not in IMAGE_FORMATS:
        told = f"ends in {ending}" if ending else "has no ending"
        raise ArgumentError(f"cannot write the {what} to {shown}: its name {told}; give a "
                            f"name ending in .png, .svg or .pdf")
    return IMAGE_FORMATS[ending.lower()]


def check_image_target(path, what: str = "plot") -> str:
    """Refuse, before any work, a path a figure can never be written to (its format or the
    file it names); returns the real path."""
    target = check_target(path, what)
    image_format(path, what)
    return target


def save_figure(fig, path, what: str = "plot") -> str:
    """Write ``fig`` atomically in the format its name asks for (see :data:`IMAGE_FORMATS`),
    creating the folder; returns the path."""
    fmt = image_format(path, what)
    check_target(path, what)
    image = io.BytesIO()
    fig.savefig(image, format=fmt, dpi=110, bbox_inches="tight")
    return write_atomically(image.getvalue(), path, what)


#: Marker of each bounding resource, the same in every sweep figure.
BOUND_MARKERS = {"DDR": "o", "DMA engine": "s", "vector unit": "^", "L2 port": "D",
                 "shared SRAM": "v", "launch overhead": "X",
                 # the lower bounds of programs
                 "calls on the busiest core": "P", "longest dependency chain": "*"}


def bound_legend(bounds: Iterable[str]):
    """Legend handles and labels explaining the bound markers."""
    from matplotlib.lines import Line2D  # noqa: PLC0415

    bounds = list(dict.fromkeys(bounds))
    handles = [Line2D([], [], marker=BOUND_MARKERS.get(b, "o"), color="grey", mfc="white",
                      mec="black", ls="none", ms=8) for b in bounds]
    return handles, [f"bound: {b}" for b in bounds]


def shared_legend(fig, axes, extra_handles=(), extra_labels=(), title=None) -> None:
    """One legend for the whole figure, at its right: every panel's entries, once each."""
    seen: dict[str, object] = {}
    for ax in axes:
        for handle, label in zip(*ax.get_legend_handles_labels(), strict=True):
            seen.setdefault(label, handle)
    handles = list(seen.values()) + list(extra_handles)
    labels = list(seen) + list(extra_labels)
    fig.legend(handles, labels, loc="outside right center", fontsize=8, title=title,
               title_fontsize=8)


#: The file that lists the figures a sweep folder's last drawing wrote.
