"""``contract.lint.LintMemo``: the language server lints after every analysis; a file's
suppression comments and a config.json's ``lint`` block are read again only when their text
changed. Counted with the module's own readers, and checked against a pass without a memo."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from budgetlens import codes
from budgetlens.contract import lint
from budgetlens.contract.lint import ConfigLint, LintError, LintMemo, apply_lint
from budgetlens.source import Diagnostic, Range, Severity


def _bl050(path: str, line: int) -> Diagnostic:
    return Diagnostic(path, Range.at(line, 4, line, 9), Severity.ERROR,
                      codes.CONTRACT_VIOLATION, "over budget")


@pytest.fixture
def counted(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The texts ``lint.suppressions`` reads, in order."""
    read: list[str] = []
    real = lint.suppressions

    def suppressions(text: str) -> list[lint.Suppression]:
        read.append(text)
        return real(text)
    monkeypatch.setattr(lint, "suppressions", suppressions)
    return read


def test_comments_are_read_again_only_when_the_text_changed(
        tmp_path: Path, counted: list[str]) -> None:
    a, b = str(tmp_path / "a.yaml"), str(tmp_path / "b.yaml")
    texts = {a: "steps:\n  - x  # budgetlens: ignore[BL050]\n", b: "steps: []\n"}
    diags = [_bl050(a, 1)]
    settings = ConfigLint(lambda p: None)
    memo = LintMemo()
    for _ in range(3):  # three analyses, nothing changed
        assert apply_lint(diags, settings, texts.get, [a, b], memo) == []
    assert len(counted) == 2  # a and b, once each

    texts[a] = "steps:\n  - x  # budgetlens: ignore[BL052]\n"  # the comment changed
    shown = apply_lint(diags, settings, texts.get, [a, b], memo)
    assert [d.code for d in shown] == [codes.CONTRACT_VIOLATION, codes.UNUSED_SUPPRESSION]
    assert counted[2:] == [texts[a]]
    assert shown == apply_lint(diags, settings, texts.get, [a, b])  # as without a memo


def test_a_file_no_pass_reads_is_dropped(tmp_path: Path, counted: list[str]) -> None:
    a = str(tmp_path / "a.yaml")
    texts = {a: "# budgetlens: ignore\n"}
    memo = LintMemo()
    settings = ConfigLint(lambda p: None)
    apply_lint([], settings, texts.get, [a], memo)
    apply_lint([], settings, texts.get, [], memo)  # a is gone from the workspace
    apply_lint([], settings, texts.get, [a], memo)  # back: read again
    assert counted == [texts[a], texts[a]]


def test_a_lint_block_is_parsed_again_only_when_its_text_changed(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    config = str(tmp_path / "config.json")
    Path(config).write_text("{}")  # nearest_config finds it on disk
    texts = {config: json.dumps({"lint": {"ignore": ["BL050"]}})}
    parsed: list[object] = []
    real = lint.settings_from_config

    def settings_from_config(data: object, path: str) -> lint.LintSettings:
        parsed.append(data)
        return real(data, path)
    monkeypatch.setattr(lint, "settings_from_config", settings_from_config)
    memo = LintMemo()
    pipeline = str(tmp_path / "p.yaml")
    for _ in range(3):  # a new ConfigLint per analysis, as the server makes one
        assert not ConfigLint(texts.get, memo=memo)(pipeline).enabled("BL050", pipeline)
    assert len(parsed) == 1

    texts[config] = json.dumps({"lint": {"ignore": ["BL06"]}})
    settings = ConfigLint(texts.get, memo=memo)(pipeline)
    assert settings.enabled("BL050", pipeline) and not settings.enabled("BL061", pipeline)
    assert len(parsed) == 2

    texts[config] = json.dumps({"lint": {"ignore": ["BL999"]}})  # a bad block, every time
    for _ in range(2):
        with pytest.raises(LintError, match="unknown code 'BL999'"):
            ConfigLint(texts.get, memo=memo)(pipeline)
        loose = ConfigLint(texts.get, strict=False, memo=memo)
        assert loose(pipeline).enabled("BL050", pipeline)  # counts as absent
        assert [d.code for d in loose.problems()] == [codes.CONFIG_VALUE_INVALID]
    assert len(parsed) == 3
