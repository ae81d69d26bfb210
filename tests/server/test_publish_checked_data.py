"""A diagnostic's ``data`` is checked for plain JSON once, when the converter builds it (on
the analysis thread), not again when the message loop writes the push: for a shared
prompt's edit the second walk was a third of the loop's time for 201 pushes (issue 12)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types

from budgetlens_lsp import convert
from budgetlens_lsp.convert import CheckedJson, publish_json
from budgetlens_lsp.features import diagnostics
from budgetlens_lsp.features.state import Analysis
from budgetlens_lsp.workspace_index import IndexMode, Snapshot, norm

from .scheduling.test_forced import _prompt, _workspace


def _count_walks(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    walked: list[Any] = []
    real = convert._plain

    def counting(value: Any) -> bool:
        walked.append(value)
        return real(value)
    monkeypatch.setattr(convert, "_plain", counting)
    return walked


def test_the_pushes_of_a_prompt_edit_walk_each_payload_once(tmp_path: Path,
                                                           monkeypatch: pytest.MonkeyPatch
                                                           ) -> None:
    prompt = norm(_workspace(tmp_path / "ws"))
    snap = Snapshot(overlay={prompt: _prompt(3)}, open_uris={prompt: Path(prompt).as_uri()},
                    versions={Path(prompt).as_uri(): 2}, roots=(norm(tmp_path / "ws"),))
    walked = _count_walks(monkeypatch)
    pushes = list(diagnostics.analyze(Analysis(), snap, frozenset(), IndexMode.FULL, None))
    budget = [d for p in pushes for d in p.diagnostics if d.code == "BL052"]
    assert len(budget) >= 5  # the prompt's four dependents, over budget, and the prompt
    with_core = [d for d in budget if isinstance(d.data, dict) and "core" in d.data]
    assert with_core and all(type(d.data) is CheckedJson for d in budget)
    # the converter checked each core payload (the terms' locations, the budget) once
    assert sum(1 for v in walked if isinstance(v, dict) and "terms" in v) == len(with_core)
    walked.clear()
    written = [publish_json(p) for p in pushes]
    assert walked == []  # the loop writes them without walking them again
    assert all(w is not None for w in written)
    for params, out in zip(pushes, written, strict=True):
        assert out is not None
        for diag, item in zip(params.diagnostics, out["diagnostics"], strict=True):
            assert json.dumps(item["data"]) == json.dumps(dict(diag.data))


def test_data_the_converter_did_not_build_is_still_checked(monkeypatch: pytest.MonkeyPatch
                                                           ) -> None:
    rng = types.Range(start=types.Position(line=0, character=0),
                      end=types.Position(line=0, character=1))
    walked = _count_walks(monkeypatch)
    plain = types.Diagnostic(range=rng, message="m", data={"pipeline": "p", "n": [1, None]})
    odd = types.Diagnostic(range=rng, message="m", data={"pipeline": "p", "n": (1, 2)})
    assert publish_json(types.PublishDiagnosticsParams(uri="file:///a", diagnostics=[plain])
                        ) == {"uri": "file:///a", "diagnostics": [
                            {"range": {"start": {"line": 0, "character": 0},
                                       "end": {"line": 0, "character": 1}},
                             "message": "m", "data": {"pipeline": "p", "n": [1, None]}}]}
    assert publish_json(types.PublishDiagnosticsParams(uri="file:///a", diagnostics=[odd])
                        ) is None  # a tuple: the converter writes it instead
    assert walked == [plain.data, odd.data]


def test_checked_data_reads_back_as_a_plain_payload() -> None:
    checked = CheckedJson(pipeline="/ws/p.yaml", step="s", code="BL050", core={"n": [1]})
    assert checked == {"pipeline": "/ws/p.yaml", "step": "s", "code": "BL050",
                       "core": {"n": [1]}}
    assert json.loads(json.dumps(checked)) == dict(checked)
    back = convert.DiagnosticData.from_json(checked)
    assert back == convert.DiagnosticData("/ws/p.yaml", "s", "BL050", {"n": [1]})
