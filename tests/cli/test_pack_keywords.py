"""``budgetlens pack --map``: a keyword that is not a valid regular expression is refused when
the map is read, before any intent is matched, with the file, the intent and the pattern named
(exit 2, no traceback). A pattern that compiles is not judged: docs/injection-and-packing.md
says why and which patterns to avoid."""

from __future__ import annotations

from pathlib import Path

import pytest

from budgetlens_cli.main import main

DOCS = Path(__file__).resolve().parents[2] / "examples" / "packing" / "docs.json"


def _pack(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
          keywords: str, intent: str) -> tuple[int, str, str]:
    (tmp_path / "m.yaml").write_text(
        "version: 1\n"
        "default_intent: general\n"
        "intents:\n"
        "  review:\n"
        "    keywords: ['review']\n"
        "  synopsis:\n"
        f"    keywords: {keywords}\n"
        "  general: {}\n", "utf-8")
    monkeypatch.chdir(tmp_path)
    code = main(["pack", str(DOCS), "--intent", intent, "--map", "m.yaml"])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize("intent", ["write the synopses", "general"])
def test_an_invalid_keyword_is_refused_naming_the_map_the_intent_and_the_pattern(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
        intent: str) -> None:
    code, out, err = _pack(tmp_path, monkeypatch, capsys, "['synops[ie]s', '(a']", intent)
    assert (code, out) == (2, "")
    assert err == (
        "budgetlens: error: m.yaml: invalid intent map:\n"
        "  m.yaml: intents.synopsis.keywords: keyword '(a' is not a valid regular expression:"
        " missing ), unterminated subpattern at position 0\n")


def test_a_valid_keyword_matches_case_insensitively(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = _pack(tmp_path, monkeypatch, capsys, "['synops[ie]s']",
                           "Write the SYNOPSES")
    assert (code, err) == (0, "")
    assert out.startswith("intent synopsis (keyword synops[ie]s): ")
