"""The typed payload of ``Diagnostic.data``: what the server sends, and what it accepts back
from a client that sends none, or something else."""

from __future__ import annotations

from lsprotocol import types

from budgetlens.source import Diagnostic, Range, Severity
from budgetlens_lsp.convert import Converter, DiagnosticData
from budgetlens_lsp.features.actions import quick_fixes
from budgetlens_lsp.features.edits import EditContext
from budgetlens_lsp.workspace_index import WorkspaceIndex


def test_the_payload_carries_pipeline_step_code_and_the_core_data_as_json() -> None:
    diag = Diagnostic("/ws/pipelines/a.yaml", Range.at(2, 4, 2, 9), Severity.WARNING, "BL008",
                      "unknown key", "/ws/pipelines/a.yaml", "draft",
                      data={"rename": {"from": "max_token", "to": "max_tokens",
                                       "range": Range.at(2, 4, 2, 13), "new_text": None}})
    lsp = Converter("utf-16", lambda _: "").diagnostic(diag)
    assert lsp.data == {
        "pipeline": "/ws/pipelines/a.yaml", "step": "draft", "code": "BL008",
        "core": {"rename": {"from": "max_token", "to": "max_tokens",
                            "range": {"start": {"line": 2, "character": 4},
                                      "end": {"line": 2, "character": 13}},
                            "new_text": None}}}
    assert list(lsp.data) == ["pipeline", "step", "code", "core"]
    back = DiagnosticData.from_json(lsp.data)
    assert back is not None and (back.pipeline, back.step, back.code) == (
        "/ws/pipelines/a.yaml", "draft", "BL008")


def test_a_diagnostic_without_core_data_sends_no_core_key() -> None:
    diag = Diagnostic("/ws/p.yaml", Range.at(0, 0), Severity.ERROR, "BL050", "over")
    assert Converter("utf-16", lambda _: "").diagnostic(diag).data == {
        "pipeline": None, "step": None, "code": "BL050"}


def test_missing_or_foreign_data_reads_as_nothing_trusted() -> None:
    assert DiagnosticData.from_json(None) is None
    assert DiagnosticData.from_json("pipeline") is None
    assert DiagnosticData.from_json([1, 2]) is None
    odd = DiagnosticData.from_json({"pipeline": 7, "step": ["x"], "code": "BL050",
                                    "core": "text", "other": 1})
    assert odd == DiagnosticData(None, None, "BL050", None)


def test_a_budget_diagnostic_with_no_or_foreign_data_gets_no_quick_fix() -> None:
    index = WorkspaceIndex()
    ctx = EditContext({}, document_changes=False)
    rng = types.Range(start=types.Position(line=0, character=0),
                      end=types.Position(line=0, character=1))
    for data in (None, "x", {"pipeline": 3}, {"pipeline": "/nowhere/p.yaml", "step": 1}):
        diag = types.Diagnostic(range=rng, message="over", code="BL050", source="budgetlens",
                                data=data)
        assert quick_fixes(index, "/nowhere/p.yaml", diag, ctx) == []


def _reference_plain(value: object) -> bool:
    """Plain JSON, by the definition: exact dicts with exact str keys, exact lists, exact
    scalars (a recursive reference, independent of the server's loop)."""
    if type(value) in (str, int, float, bool, type(None)):
        return True
    if type(value) is dict:
        return all(type(k) is str and _reference_plain(v) for k, v in value.items())
    if type(value) is list:
        return all(_reference_plain(v) for v in value)
    return False


class _Text(str):
    pass


def test_plain_core_data_is_sent_as_it_is_and_anything_else_converted() -> None:
    from enum import Enum

    from budgetlens_lsp.convert import _plain

    class Stage(str, Enum):
        CHECK = "check"

    budget = {"budget": {"total": 9000, "window": 8192, "fits": False, "ratio": 1.1},
              "terms": {"context": {"value": 3000, "location": {"file": "/w/p.yaml",
                                                                "range": [[1, 2], [1, 6]]}},
                        "output": {"value": 512, "location": None}},
              "step_index": 3, "defined_in": "/w/p.yaml", "tags": ["a", ["b", {"c": []}]]}
    cases: list[object] = [
        budget, {}, [], "x", 1, 1.5, True, None, [[[[{"a": [1, {"b": None}]}]]]],
        {"stage": Stage.CHECK}, {"range": Range.at(0, 0)}, {"t": (1, 2)}, {1: "a"},
        {"a": [1, {2: 3}]}, {"a": [1, {"b": {"c": (4,)}}]}, {"s": _Text("x")},
        {"deep": {"deeper": [{"deepest": [{"x": Severity.ERROR}]}]}}, {"set": {1}}]
    for value in cases:
        assert _plain(value) is _reference_plain(value), value
    # plain data goes out as it is (not copied); the rest through to_jsonable
    diag = Diagnostic("/w/p.yaml", Range.at(0, 0), Severity.ERROR, "BL050", "over",
                      data=budget)
    lsp = Converter("utf-16", lambda _: "").diagnostic(diag)
    assert lsp.data is not None and lsp.data["core"] is budget
    odd = Diagnostic("/w/p.yaml", Range.at(0, 0), Severity.ERROR, "BL009", "failed",
                     data={"stage": Stage.CHECK, "where": (1, 2)})
    assert Converter("utf-16", lambda _: "").diagnostic(odd).data["core"] == {
        "stage": "check", "where": [1, 2]}


def test_each_fix_kind_goes_to_json_and_back_by_its_code() -> None:
    from budgetlens.source import ClampFix, FailureStage, JsonCut, JsonTooLarge, RenameKey

    cases = [
        ("BL008", RenameKey("max_token", "max_tokens", Range.at(2, 4, 2, 13), None)),
        ("BL008", RenameKey("max_token", "max_tokens", Range.at(1, 0, 1, 9), "max_tokens")),
        ("BL050", ClampFix({"total": 9000}, 3, "/w/p.yaml", {"context": {"value": 1}})),
        ("BL052", ClampFix({}, 0, "/w/base.yaml", {})),
        ("BL009", FailureStage("check")),
        ("BL200", JsonCut("$.items[2]", "string")),
        ("BL201", JsonTooLarge(2_000_001)),
    ]
    conv = Converter("utf-16", lambda _: "")
    for code, fix in cases:
        diag = Diagnostic("/w/p.yaml", Range.at(0, 0), Severity.ERROR, code, "m", data=fix)
        sent = conv.diagnostic(diag).data
        back = DiagnosticData.from_json(sent)
        assert back is not None and back.fix() == fix, code


def test_a_client_payload_of_an_unknown_code_or_shape_is_ignored() -> None:
    rename = {"rename": {"from": "a", "to": "b", "new_text": "b",
                         "range": {"start": {"line": 0, "character": 0},
                                   "end": {"line": 0, "character": 1}}}}
    assert DiagnosticData(code="BL008", core=rename).fix() is not None
    for code, core in [
        ("BL999", rename), (None, rename), ("BL050", rename), ("BL008", None),
        ("BL008", {"rename": "x"}), ("BL008", {"rename": {"from": 1, "to": "b"}}),
        ("BL008", {"rename": {**rename["rename"], "range": {"start": [0, 0]}}}),
        ("BL009", {"stage": 3}), ("BL201", {"length": True}), ("BL201", {"length": "9"}),
        ("BL200", {"path": "$"}), ("BL050", {"budget": [], "step_index": 0,
                                             "defined_in": "p", "terms": {}}),
    ]:
        assert DiagnosticData(code=code, core=core).fix() is None, (code, core)
