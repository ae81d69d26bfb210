"""What a publish re-uses from the one before (issue 12): the disk text of a closed file
(kept by its stat fingerprint), the LSP ranges converted for a file whose text is the same,
and a re-checked pipeline's dependency edges. Counted, never timed; and every answer equals
one computed without the re-use.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from lsprotocol import types

from budgetlens.source import Position, Range
from budgetlens_lsp.convert import UTF8, UTF16, Converter, RangeMemo
from budgetlens_lsp.features import diagnostics
from budgetlens_lsp.features.state import Analysis
from budgetlens_lsp.workspace_index import IndexMode, Snapshot, WorkspaceIndex, norm

from .scheduling.test_forced import _prompt, _workspace

RANGE = Range(Position(1, 4), Position(1, 6))  # the 5th and 6th characters of line 2


def _lsp(line: int, start: int, end: int) -> types.Range:
    return types.Range(start=types.Position(line=line, character=start),
                       end=types.Position(line=line, character=end))


def _counting_positions(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    calls: list[str] = []
    real = Converter.position

    def position(self: Converter, file: str, pos: Position) -> types.Position:
        calls.append(file)
        return real(self, file, pos)
    monkeypatch.setattr(Converter, "position", position)
    return calls


def test_ranges_are_converted_once_while_the_text_is_the_same(
        monkeypatch: pytest.MonkeyPatch) -> None:
    calls = _counting_positions(monkeypatch)
    memo = RangeMemo()
    texts = {"f": "x\nabcdef\n"}
    first = Converter(UTF16, texts.get, memo).range("f", RANGE)
    again = Converter(UTF16, texts.get, memo).range("f", RANGE)
    assert first == again == _lsp(1, 4, 6)
    assert len(calls) == 2  # start and end, by the first converter only
    texts["f"] = "x\n👍bcdef\n"  # an emoji: 2 UTF-16 units before the range
    assert Converter(UTF16, texts.get, memo).range("f", RANGE) == _lsp(1, 5, 7)
    assert Converter(UTF8, texts.get, memo).range("f", RANGE) == _lsp(1, 7, 9)
    assert len(calls) == 6  # a new text, then a new encoding: converted again
    # the same answers as converters without a memo
    assert Converter(UTF8, texts.get).range("f", RANGE) == _lsp(1, 7, 9)


def test_the_memo_is_bounded() -> None:
    memo = RangeMemo(max_files=3)
    for i in range(10):
        memo.ranges(f"f{i}", UTF16, "text")
        assert len(memo) <= 3


def test_a_closed_file_is_read_again_only_when_its_stat_changes(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    reads: list[str] = []
    real = Path.read_text

    def read_text(self: Path, *args: object, **kwargs: object) -> str:
        reads.append(str(self))
        return real(self, *args, **kwargs)  # type: ignore[arg-type]
    monkeypatch.setattr(Path, "read_text", read_text)
    path = tmp_path / "a.yaml"
    path.write_text("steps: []\n")
    index = WorkspaceIndex()
    key = norm(path)
    assert index.text_of(key) == "steps: []\n"
    assert index.text_of(key) == "steps: []\n"
    assert reads == [key]
    path.write_text("steps: [1]\n")  # another size
    assert index.text_of(key) == "steps: [1]\n"
    st = os.stat(path)
    path.write_text("steps: [2]\n")  # the same size, another modification time
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 10**9))
    assert index.text_of(key) == "steps: [2]\n"
    assert reads == [key] * 3
    path.unlink()
    assert index.text_of(key) is None
    assert index.text_of(str(tmp_path)) is None  # a folder is no text


def test_each_publish_converts_only_what_moved(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Two keystrokes in a shared prompt: every dependent is re-published (its message has
    the new count), but the second publish converts no position of a closed dependent; and
    its pushes equal those of a fresh analysis with no memo."""
    prompt_path = _workspace(tmp_path / "ws")
    root, prompt = norm(tmp_path / "ws"), norm(prompt_path)
    analysis = Analysis()

    def publish(version: int) -> list[types.PublishDiagnosticsParams]:
        snap = Snapshot(overlay={prompt: _prompt(version)},
                        open_uris={prompt: prompt_path.as_uri()},
                        versions={prompt_path.as_uri(): version}, roots=(root,))
        mode = IndexMode.FULL if version == 1 else IndexMode.INCREMENTAL
        return list(diagnostics.analyze(analysis, snap, frozenset({prompt}), mode, None))
    publish(1)
    calls = _counting_positions(monkeypatch)
    for version in (2, 3):
        calls.clear()
        pushed = publish(version)
        assert len(pushed) == 1 + 4  # the prompt and its 4 dependents
        # closed and unchanged dependents: their ranges are the last publish's
        assert set(calls) <= {prompt} and calls
    fresh = Analysis()
    snap = Snapshot(overlay={prompt: _prompt(3)}, open_uris={prompt: prompt_path.as_uri()},
                    versions={prompt_path.as_uri(): 3}, roots=(root,))
    expected = diagnostics.analyze(fresh, snap, frozenset(), IndexMode.FULL, None)
    assert sorted(pushed, key=lambda p: p.uri) == sorted(expected, key=lambda p: p.uri)


def test_a_recheck_with_the_same_inputs_keeps_the_edges_and_a_new_input_moves_them(
        tmp_path: Path) -> None:
    prompt_path = _workspace(tmp_path / "ws")
    root, prompt = norm(tmp_path / "ws"), norm(prompt_path)
    own = norm(tmp_path / "ws/prompts/own.txt")
    index = WorkspaceIndex()
    index.update(Snapshot(roots=(root,)), frozenset(), IndexMode.FULL)
    edges = {k: set(v) for k, v in index.dependents.items()}
    assert len(edges[prompt]) == 4
    index.update(Snapshot(overlay={prompt: _prompt(7)}, roots=(root,)), frozenset({prompt}))
    assert {k: set(v) for k, v in index.dependents.items()} == edges
    # p0 stops reading the shared prompt: its edge goes, the others stay
    p0 = norm(tmp_path / "ws/pipelines/p0.yaml")
    text = Path(p0).read_text().replace("prompt_key: shared", "prompt_key: own")
    index.update(Snapshot(overlay={prompt: _prompt(7), p0: text}, roots=(root,)),
                 frozenset({p0}))
    assert p0 not in index.dependents[prompt] and len(index.dependents[prompt]) == 3
    assert p0 in index.dependents[own]
