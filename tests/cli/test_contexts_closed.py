"""``budgetlens contexts`` prints the hierarchy context by default and the closed document
only with ``--closed`` (issue 35): for a 1 MB reply the default output stays a few
kilobytes, as the budget and the overlap length bound it."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from budgetlens_cli.main import main

#: what closes the reply below when it is cut inside an item's "body" string
CLOSING = '"}]}}'


def _big_reply() -> str:
    """A reply of records (as an LLM writes a long list), cut inside the last body string
    once it passes 1,000,000 characters."""
    head = '{"report": {"items": ['
    items = [json.dumps({"id": i, "title": f"Item {i}", "body": "lorem ipsum " * 8})
             for i in range(20_000)]
    text = head + ", ".join(items)
    cut = text.index('"body": "', 1_000_000) + len('"body": "lorem')
    return text[:cut]


@pytest.fixture
def reply(tmp_path: Path) -> tuple[Path, str]:
    text = _big_reply()
    assert len(text) > 1_000_000
    json.loads(text + CLOSING)  # the closing worked out by hand parses
    path = tmp_path / "reply.json"
    path.write_text(text, "utf-8")
    return path, text


def test_default_output_of_a_1_mb_reply_is_small(
        reply: tuple[Path, str], capsys: pytest.CaptureFixture[str]) -> None:
    path, text = reply
    assert main(["contexts", str(path)]) == 0
    out = capsys.readouterr().out
    # the budget (1,000 characters of values) and the overlap (48) bound it; structure
    # and hints add a little
    assert len(out.encode("utf-8")) < 8_000
    assert "--- hierarchy context for the prompt (budget 1000) ---" in out
    assert out.count("lorem") < 200  # a few items in full, not the 6,961 before the cut
    assert "--- complete part ---" not in out
    closed = len(text) + len(CLOSING)
    assert out.endswith(f"\ncomplete part: {closed:,} characters (--closed prints it)\n")


def test_closed_prints_the_closed_document(
        reply: tuple[Path, str], capsys: pytest.CaptureFixture[str]) -> None:
    path, text = reply
    assert main(["contexts", str(path), "--closed"]) == 0
    out = capsys.readouterr().out
    assert out.endswith("\n--- complete part ---\n" + text + CLOSING + "\n")
    assert "(--closed prints it)" not in out


def test_default_output_in_a_real_process_reading_standard_input(
        reply: tuple[Path, str]) -> None:
    path, _ = reply
    proc = subprocess.run([sys.executable, "-m", "budgetlens_cli", "contexts", "-"],
                          input=path.read_bytes(), capture_output=True, check=False)
    assert proc.returncode == 0, proc.stderr
    assert 0 < len(proc.stdout) < 8_000
    assert proc.stdout.rstrip().endswith(b"(--closed prints it)")


def test_a_complete_reply_prints_its_size_only(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "reply.json"
    path.write_text('{"a": [1, 2]}\n', "utf-8")
    assert main(["contexts", str(path)]) == 0
    assert capsys.readouterr().out == (
        "complete JSON\n"
        "json_parsing_success: true\n"
        "\n"
        "complete part: 13 characters (--closed prints it)\n")
