"""``contract.lint.lint_pass``: the language server's lint pass keeps each file's result and
reuses it while the file's version (its text), its diagnostics and its settings are the
same. Whatever changed, the result is a fresh ``apply_lint``'s, file by file."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from budgetlens import codes
from budgetlens.contract.lint import ConfigLint, LintMemo, apply_lint, lint_pass
from budgetlens.source import Diagnostic, Range, Severity
from tests.workspaces.lint import count_filtered


def _bl050(path: str, line: int) -> Diagnostic:
    return Diagnostic(path, Range.at(line, 4, line, 9), Severity.ERROR,
                      codes.CONTRACT_VIOLATION, "over budget")


def _by_file(diags: list[Diagnostic]) -> dict[str, list[Diagnostic]]:
    out: dict[str, list[Diagnostic]] = {}
    for d in diags:
        out.setdefault(d.file, []).append(d)
    return out


class _Workspace:
    """Three pipelines and a config.json, as texts with versions (the server's reports)."""

    def __init__(self, tmp_path: Path) -> None:
        self.config = str(tmp_path / "config.json")
        Path(self.config).write_text("{}")  # nearest_config finds it on disk
        self.a, self.b, self.c = (str(tmp_path / f"{n}.yaml") for n in "abc")
        self.texts = {
            self.config: "{}",
            self.a: "steps:\n  - x  # budgetlens: ignore[BL050]\n",  # suppresses its BL050
            self.b: "steps:\n  - y  # budgetlens: ignore[BL061]\n",  # suppresses nothing
            self.c: "steps:\n  - z\n",
        }
        #: the version of each file: a new object when its text changes
        self.versions: dict[str, object] = {p: object() for p in (self.a, self.b, self.c)}
        self.diags = [_bl050(self.a, 1), _bl050(self.c, 1)]
        self.reads: Counter[str] = Counter()
        self.memo = LintMemo()

    def text_of(self, path: str) -> str | None:
        self.reads[path] += 1
        return self.texts.get(path)

    def edit(self, path: str, text: str) -> None:
        self.texts[path] = text
        self.versions[path] = object()

    def run(self) -> list[Diagnostic]:
        return lint_pass(self.diags, ConfigLint(self.text_of, memo=self.memo), self.text_of,
                         dict(self.versions), self.memo)

    def fresh(self) -> dict[str, list[Diagnostic]]:
        """A fresh ``apply_lint`` (no memo), by file."""
        return _by_file(apply_lint(self.diags, ConfigLint(self.texts.get), self.texts.get,
                                   list(self.versions)))


@pytest.fixture
def enabled(monkeypatch: pytest.MonkeyPatch) -> Counter[str]:
    """The files whose diagnostics were filtered by their settings, with how often."""
    return count_filtered(monkeypatch)


def test_an_unchanged_file_is_not_read_or_filtered_again(
        tmp_path: Path, enabled: Counter[str]) -> None:
    ws = _Workspace(tmp_path)
    first = ws.run()
    # by hand: a's BL050 suppressed, b's comment unused, c's BL050 shown
    assert [(d.file, d.code) for d in first] == [
        (ws.c, codes.CONTRACT_VIOLATION), (ws.b, codes.UNUSED_SUPPRESSION)]
    assert _by_file(first) == ws.fresh()
    reads, asked = dict(ws.reads), dict(enabled)
    for _ in range(3):  # three analyses: nothing changed
        assert ws.run() == first
    assert {p: n for p, n in ws.reads.items() if p != ws.config} == \
        {p: n for p, n in reads.items() if p != ws.config}
    assert dict(enabled) == asked


def test_a_changed_comment_is_read_and_linted_again(
        tmp_path: Path, enabled: Counter[str]) -> None:
    ws = _Workspace(tmp_path)
    ws.run()
    ws.edit(ws.a, "steps:\n  - x  # budgetlens: ignore[BL052]\n")
    shown = ws.run()
    assert [(d.file, d.code) for d in shown if d.file == ws.a] == [
        (ws.a, codes.CONTRACT_VIOLATION), (ws.a, codes.UNUSED_SUPPRESSION)]
    assert _by_file(shown) == ws.fresh()
    ws.edit(ws.b, "steps:\n  - y\n")  # b's comment gone: no BL080 left
    shown = ws.run()
    assert ws.b not in _by_file(shown)
    assert _by_file(shown) == ws.fresh()


def test_a_file_without_a_version_is_read_each_pass(tmp_path: Path) -> None:
    ws = _Workspace(tmp_path)
    ws.versions[ws.b] = None  # an open buffer
    ws.run()
    ws.texts[ws.b] = "steps:\n  - y  # budgetlens: ignore\n"  # typed, not saved
    shown = ws.run()
    assert [d.message for d in shown if d.file == ws.b] == [
        "unused suppression: no diagnostic on this line"]
    assert _by_file(shown) == ws.fresh()


def test_changed_settings_are_applied_again(tmp_path: Path, enabled: Counter[str]) -> None:
    ws = _Workspace(tmp_path)
    ws.run()
    ws.texts[ws.config] = json.dumps({"lint": {"ignore": ["BL050", "BL080"]}})
    shown = ws.run()
    assert shown == []  # c's BL050 and b's BL080 are off
    assert _by_file(shown) == ws.fresh()
    ws.texts[ws.config] = json.dumps({"lint": {"per_file_ignores": {"c.yaml": ["BL05"]}}})
    shown = ws.run()
    assert [(d.file, d.code) for d in shown] == [(ws.b, codes.UNUSED_SUPPRESSION)]
    assert _by_file(shown) == ws.fresh()


def test_a_new_diagnostic_is_linted_again(tmp_path: Path, enabled: Counter[str]) -> None:
    ws = _Workspace(tmp_path)
    ws.run()
    before = enabled[ws.a]
    new = _bl050(ws.a, 1)  # a re-check of a: an equal diagnostic, a new object
    ws.diags = [new, ws.diags[1]]
    shown = ws.run()
    assert enabled[ws.a] == before + 2  # its BL050, then whether BL080 is on
    assert _by_file(shown) == ws.fresh()
    ws.diags = [new, ws.diags[1], _bl050(ws.b, 1)]  # b's line now has a BL050: shown
    shown = ws.run()
    assert [(d.file, d.code) for d in shown if d.file == ws.b] == [
        (ws.b, codes.CONTRACT_VIOLATION), (ws.b, codes.UNUSED_SUPPRESSION)]
    assert _by_file(shown) == ws.fresh()
    ws.diags = [d for d in ws.diags if d.file != ws.c]  # c fixed: nothing left in it
    shown = ws.run()
    assert ws.c not in _by_file(shown)
    assert _by_file(shown) == ws.fresh()


def test_the_kept_diagnostics_are_the_objects_given(tmp_path: Path) -> None:
    ws = _Workspace(tmp_path)
    ws.run()
    ws.diags = [_bl050(ws.a, 1), _bl050(ws.c, 1)]  # equal, new objects
    shown = ws.run()
    assert [d for d in shown if d.code == codes.CONTRACT_VIOLATION] == [ws.diags[1]]
    assert next(d for d in shown if d.code == codes.CONTRACT_VIOLATION) is ws.diags[1]


def test_a_file_gone_is_dropped(tmp_path: Path) -> None:
    ws = _Workspace(tmp_path)
    ws.run()
    del ws.versions[ws.b]
    assert _by_file(ws.run()) == ws.fresh()
    assert ws.b not in ws.memo._parts
