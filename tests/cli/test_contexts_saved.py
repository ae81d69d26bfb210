"""``budgetlens contexts`` on what editors and clients actually save: a cut reply followed by a
final newline, and a cut inside a literal. The expected output is written by hand."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from budgetlens_cli.main import main

CUT = '{"reply": {"items": ["one", "two", "thr'   # 39 characters

TEXT_OUTPUT = """\
cut inside a string at reply.items[2]
position: line 1, column 40 (offset 39)
json_parsing_success: true

--- hierarchy context for the prompt (budget 1000) ---
// cut inside a string at reply.items[2]; the text stops at <<<CUT>>>
{
  "reply": {
    "items": [
      "one",
      "two",
      "thr<<<CUT>>>

--- overlap context ---
{"reply": {"items": ["one", "two", "thr

--- complete part ---
{"reply": {"items": ["one", "two", "thr"]}}
"""


@pytest.mark.parametrize("ending", ["\n", "\r\n", "\n\n", "\t\n"])
def test_contexts_text_on_a_cut_string_saved_with_a_final_newline(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], ending: str) -> None:
    path = tmp_path / "reply.json"
    path.write_bytes((CUT + ending).encode("utf-8"))
    assert main(["contexts", str(path), "--closed"]) == 0
    captured = capsys.readouterr()
    assert captured.out == TEXT_OUTPUT
    assert captured.err == ""


def test_contexts_json_on_a_cut_string_saved_with_a_final_newline(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "reply.json"
    path.write_bytes((CUT + "\n").encode("utf-8"))
    assert main(["contexts", str(path), "--format", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["json_parsing_success"] is True
    assert data["error"] is None
    assert data["description"] == "cut inside a string at reply.items[2]"
    assert data["cut"] == {"offset": 39, "line": 0, "character": 39,
                           "path": ["reply", "items", 2], "kind": "string",
                           "path_text": "reply.items[2]",
                           "description": "cut inside a string at reply.items[2]"}
    assert data["complete_part"] == '{"reply": {"items": ["one", "two", "thr"]}}'
    assert data["hierarchy_context"] == CUT
    assert data["overlap_context"] == CUT
    assert data["hierarchy_context_for_prompt"].endswith('      "thr<<<CUT>>>')


def test_contexts_on_a_cut_literal_completes_it(tmp_path: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "reply.json"
    path.write_text('{"ok": tr\n', "utf-8")
    assert main(["contexts", str(path), "--closed"]) == 0
    assert capsys.readouterr().out == """\
cut inside a literal (true, false or null) at ok
position: line 1, column 10 (offset 9)
json_parsing_success: true

--- hierarchy context for the prompt (budget 1000) ---
// cut inside a literal (true, false or null) at ok; the text stops at <<<CUT>>>
{
  "ok": tr<<<CUT>>>

--- overlap context ---
{"ok": tr

--- complete part ---
{"ok": true}
"""
    assert main(["contexts", str(path), "--format", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["complete_part"] == '{"ok": true}'
    assert (data["cut"]["kind"], data["cut"]["path"]) == ("literal", ["ok"])


@pytest.mark.parametrize(("text", "closed"), [
    ("[false, n", "[false, null]"),
    ('{"a": [1, f', '{"a": [1, false]}'),
    ("[1, 12", "[1, 12]"),   # a number prefix that is a number: kept as written
    ("[1, 1.", "[1]"),       # one that is not: dropped
])
def test_contexts_complete_part_of_literal_and_number_cuts(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str, closed: str) -> None:
    path = tmp_path / "reply.json"
    path.write_text(text, "utf-8")
    assert main(["contexts", str(path), "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["complete_part"] == closed


def test_contexts_on_a_complete_reply_with_a_final_newline(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "reply.json"
    path.write_text('{\n  "a": "x y",\n  "b": [1, 2]\n}\n', "utf-8")
    assert main(["contexts", str(path), "--closed"]) == 0
    assert capsys.readouterr().out == """\
complete JSON
json_parsing_success: true

--- complete part ---
{
  "a": "x y",
  "b": [1, 2]
}
"""
