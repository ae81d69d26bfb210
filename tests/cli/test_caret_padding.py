"""The caret line under a diagnostic's source line is padded to the diagnostic's column with
blanks as wide on screen as the text before it (tabs kept, wide characters two columns). An
ASCII prefix is padded in one call, not with a width look-up per character (a long line with
many diagnostics, as a template of many unclosed braces gives, is padded once for each)."""

from __future__ import annotations

import pytest

from budgetlens_cli import check_text


def test_an_ascii_prefix_is_blanks_and_its_tabs() -> None:
    assert check_text._pad("ab\tc: {x") == "  \t     "
    assert check_text._pad("\x01\x7f") == "  "  # one column each, as display_width has them
    assert check_text._pad("") == ""


def test_a_wide_character_is_two_blanks() -> None:
    assert check_text._pad("数\tab😀é") == "  \t    " + " " * 1


def test_an_ascii_prefix_looks_up_no_width(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[str] = []
    real = check_text.display_width

    def counting(text: str) -> int:
        calls.append(text)
        return real(text)
    monkeypatch.setattr(check_text, "display_width", counting)
    assert check_text._pad("  template: " + "{a" * 5000) == " " * (12 + 10000)
    assert calls == []
    check_text._pad("é数")
    assert calls == ["é", "数"]
