"""The instruction-count A/B (benchmarks/ab_instructions.py): its cases, its reading of
callgrind's summary, and what it does without valgrind."""
from __future__ import annotations

import argparse
import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"


@pytest.fixture(scope="module")
def ab():
    sys.path.insert(0, str(BENCHMARKS))  # it imports ab_engine, beside it
    try:
        spec = importlib.util.spec_from_file_location("ab_instructions",
                                                      BENCHMARKS / "ab_instructions.py")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        yield module
    finally:
        sys.path.remove(str(BENCHMARKS))


def test_a_case_names_chip_operator_mask_and_power(ab):
    assert ab.parse_case("ft78ne:fp_gelu_grad_s:0xff:16") == ("ft78ne", "fp_gelu_grad_s",
                                                              0xff, 16)
    for default in ab.CASES:
        ab.parse_case(default)


@pytest.mark.parametrize("text", ["ft78ne:fp_gelu_grad_s:0xff", "ft78ne:x:zz:16", ""])
def test_a_malformed_case_says_what_a_case_is(ab, text):
    with pytest.raises(argparse.ArgumentTypeError, match="chip:operator:core_mask"):
        ab.parse_case(text)


def test_without_valgrind_it_says_so_and_succeeds(ab, monkeypatch, capsys):
    monkeypatch.setattr(ab.shutil, "which", lambda name: None)
    assert ab.main([]) == 0
    assert "valgrind is not installed" in capsys.readouterr().out


def test_it_reads_the_count_callgrind_prints(ab, monkeypatch, tmp_path):
    summary = ("==1== Events    : Ir\n==1== Collected : 123456789\n==1==\n"
               "==1== I   refs:      123,456,789\n")

    def fake_run(command, **options):
        assert command[0] == "valgrind" and "--tool=callgrind" in command
        return subprocess.CompletedProcess(command, 0, stdout="ft78ne x 1 10 99\n",
                                           stderr=summary)
    monkeypatch.setattr(ab.subprocess, "run", fake_run)
    assert ab.instructions(tmp_path, [("ft78ne", "x", 1, 10)], "calls") == (
        123456789, "ft78ne x 1 10 99\n")


def test_a_run_that_fails_stops_with_its_error(ab, monkeypatch, tmp_path):
    monkeypatch.setattr(ab.subprocess, "run", lambda command, **options:
                        subprocess.CompletedProcess(command, 1, stdout="",
                                                    stderr="ModuleNotFoundError: dspsim"))
    with pytest.raises(SystemExit, match="ModuleNotFoundError"):
        ab.instructions(tmp_path, [], "calls")
