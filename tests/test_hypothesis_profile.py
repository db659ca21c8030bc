"""The suite's repeatable profile draws the same examples whatever else is loaded."""
import importlib
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st


def _rates_drawn() -> list[float]:
    """Rates a derandomized property draws, as the invariant tests draw chips' rates."""
    seen: list[float] = []

    @settings(derandomize=True, database=None, max_examples=80)
    @given(st.floats(min_value=0.5, max_value=100.0, allow_nan=False))
    def record(rate):
        seen.append(rate)

    record()
    return seen


def test_repeatable_draws_ignore_literals_of_modules_loaded_since(tmp_path, monkeypatch):
    if not settings.default.derandomize:
        pytest.skip("the explore profile draws the project's literals on purpose")
    before = _rates_drawn()
    # a module of the project's kind (outside site-packages and the tests) full of rates
    literals = ", ".join(f"{0.5 + k * 0.731:.3f}" for k in range(120))
    (tmp_path / "literal_rates.py").write_text(f"RATES = ({literals})\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    importlib.import_module("literal_rates")
    try:
        assert _rates_drawn() == before
    finally:
        sys.modules.pop("literal_rates", None)
