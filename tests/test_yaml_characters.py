"""Chip and program files holding characters YAML forbids: one line naming the character,
its line and its column, from every reader."""
from __future__ import annotations

import pytest
from terminal import dspsim_cli, one_line_error

CHARACTERS = {"SYN": "\x16", "ETX": "\x03", "DEL": "\x7f", "ESC": "\x1b",
              "noncharacter": "\ufffe"}


@pytest.mark.parametrize("name", CHARACTERS)
def test_chip_file_with_a_control_character(tmp_path, name):
    character = CHARACTERS[name]
    path = tmp_path / "chip.yaml"
    path.write_text(f"name: x\ncores: 4{character}\n", encoding="utf-8")
    line = one_line_error(dspsim_cli("run", "fp_relu_grad_s", "--length", "8", "--chip", path))
    assert "line 2, column 9" in line and f"U+{ord(character):04X}" in line


@pytest.mark.parametrize("name", ["ESC", "noncharacter"])
def test_program_file_with_a_control_character(tmp_path, name):
    character = CHARACTERS[name]
    path = tmp_path / "p.yaml"
    path.write_text(f"chip: ft78ne\nbuffers:\n  x: {{length: 8}}{character}\n", encoding="utf-8")
    line = one_line_error(dspsim_cli("program", path))
    assert "line 3, column 17" in line and f"U+{ord(character):04X}" in line


def test_other_yaml_errors_are_one_line_with_their_place(tmp_path):
    path = tmp_path / "chip.yaml"
    path.write_text("name: x\ncores: [4\n", encoding="utf-8")
    line = one_line_error(dspsim_cli("run", "fp_relu_grad_s", "--length", "8", "--chip", path))
    assert "not valid YAML: line 3, column 1" in line
