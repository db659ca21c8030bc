"""Every code block of README.md, CONTRIBUTING.md and the docs pages runs as written, in
page order (``doc_blocks`` is the runner), and what some pages quote of their commands'
output is what the commands print."""
from __future__ import annotations

import re

import pytest
from doc_blocks import DOCUMENTS, ROOT, Ran, blocks, run_document


def _custom_kernels(ran: list[Ran], folder) -> None:
    broken = next(r.output for r in ran if "broken_ops.py" in r.block.text)
    assert "field mix['mul']" in broken
    curve = next(r.output for r in ran if "cycles speedup" in r.output)
    assert "FT78NE" in curve and "MT7004" in curve


def _speed_of_light(ran: list[Ran], folder) -> None:
    text = "\n".join(r.output for r in ran)
    assert "DDR-bound at" in text and "exp expands to 13.5 cycles/vector" in text
    assert re.search(r"^True [\w.]+$", text, re.M)  # the band holds the estimate
    assert (folder / "program.png").exists()


def _studies(ran: list[Ran], folder) -> None:
    for r in ran:
        if "--max-runs 2" in r.block.text:
            assert "more than --max-runs 2" in r.output and "refused, as asked" in r.output
        if "mask_a=0x1,0x3,0xf,0xff" in r.block.text:
            assert "1 run done, 3 already in sweeps/mlp-masks (4 planned)" in r.output
        if "--set vector.lane_width_bits" in r.block.text:
            assert "planned: 27 runs" in r.output and "sensitivity" in r.output


#: what a page says its commands print, checked against what they print
QUOTED = {"custom-kernels.md": _custom_kernels,
          "speed-of-light-and-uncertainty.md": _speed_of_light,
          "studies.md": _studies}
RUNNABLE = [document for document in DOCUMENTS if blocks(document)]


@pytest.mark.parametrize("document", RUNNABLE,
                         ids=[str(doc.relative_to(ROOT)) for doc in RUNNABLE])
def test_document_runs_as_written(tmp_path, document):
    ran = run_document(document, tmp_path)
    if document.name in QUOTED:
        folder = next(path for path in tmp_path.iterdir() if path.is_dir())
        QUOTED[document.name](ran, folder)


def test_every_quoting_page_exists_and_has_blocks():
    names = {document.name for document in RUNNABLE}
    assert set(QUOTED) <= names
