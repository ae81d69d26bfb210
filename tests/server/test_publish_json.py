"""``publishDiagnostics`` is written without lsprotocol's converter (issue 12:
``convert.publish_json``, used by the protocol's writing): the JSON must be exactly the
converter's, for every push of real workspaces, and anything it does not write goes to the
converter.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types
from pygls.protocol import LanguageServerProtocol, default_converter

from budgetlens_lsp.convert import publish_json
from budgetlens_lsp.features import diagnostics
from budgetlens_lsp.features.state import Analysis
from budgetlens_lsp.server import BudgetLensServer
from budgetlens_lsp.workspace_index import IndexMode, Snapshot, norm

from .scheduling.test_forced import _prompt, _workspace

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
CONVERTER = default_converter()


def _converted(params: types.PublishDiagnosticsParams) -> Any:
    """What lsprotocol's converter writes, as JSON text read back."""
    note = types.PublishDiagnosticsNotification(params=params)
    return json.loads(json.dumps(CONVERTER.unstructure(note)))["params"]


def _pushes(root: Path, overlay: dict[str, str], encoding: str
            ) -> list[types.PublishDiagnosticsParams]:
    open_uris = {path: Path(path).as_uri() for path in overlay}
    snap = Snapshot(overlay=overlay, open_uris=open_uris,
                    versions={uri: 7 for uri in open_uris.values()}, roots=(norm(root),),
                    encoding=encoding)
    return list(diagnostics.analyze(Analysis(), snap, frozenset(), IndexMode.FULL, None))


@pytest.mark.parametrize("encoding", ["utf-16", "utf-8", "utf-32"])
def test_the_json_of_every_push_is_the_converters(tmp_path: Path, encoding: str) -> None:
    examples = tmp_path / "examples"
    shutil.copytree(EXAMPLES, examples)
    chat = norm(examples / "pipelines/chat.yaml")
    edited = Path(chat).read_text("utf-8").replace("steps:", "# 日本語 👍\nsteps:", 1)
    pushes = _pushes(examples, {chat: edited}, encoding)
    prompt = _workspace(tmp_path / "ws")
    pushes += _pushes(tmp_path / "ws", {norm(prompt): _prompt(3)}, encoding)
    with_related = [d for p in pushes for d in p.diagnostics if d.related_information]
    assert len(pushes) >= 6 and with_related and any(p.version == 7 for p in pushes)
    assert any(p.version is None for p in pushes)  # closed files: no version key
    for params in pushes:
        assert publish_json(params) == _converted(params)


def _diagnostic(**extra: Any) -> types.Diagnostic:
    return types.Diagnostic(
        range=types.Range(start=types.Position(line=1, character=2),
                          end=types.Position(line=1, character=5)),
        message="m", severity=types.DiagnosticSeverity.Warning, code="BL050",
        source="budgetlens", **extra)


@pytest.mark.parametrize("extra", [
    {"tags": [types.DiagnosticTag.Unnecessary]},
    {"code_description": types.CodeDescription(href="https://example.com/BL050")},
    {"data": {"steps": ("a", "b")}},  # a tuple: not plain JSON
])
def test_what_it_does_not_write_goes_to_the_converter(extra: dict[str, Any]) -> None:
    params = types.PublishDiagnosticsParams(uri="file:///ws/a.yaml",
                                            diagnostics=[_diagnostic(**extra)], version=3)
    assert publish_json(params) is None
    note = types.PublishDiagnosticsNotification(params=params)
    server = BudgetLensServer()
    ours = server.protocol._serialize_message(note)  # the converter's, then
    plain = LanguageServerProtocol._serialize_message(server.protocol, note)
    assert json.dumps(ours, sort_keys=True) == json.dumps(plain, sort_keys=True)


def test_the_protocol_writes_publishes_with_it() -> None:
    params = types.PublishDiagnosticsParams(
        uri="file:///ws/a.yaml", version=2,
        diagnostics=[_diagnostic(data={"pipeline": "p", "core": {"n": [1, 2.5, None]}},
                                 related_information=[types.DiagnosticRelatedInformation(
                                     location=types.Location(uri="file:///ws/b.txt",
                                                             range=_diagnostic().range),
                                     message="r")])])
    note = types.PublishDiagnosticsNotification(params=params)
    server = BudgetLensServer()
    ours = server.protocol._serialize_message(note)
    assert ours == {"params": publish_json(params), "method": "textDocument/publishDiagnostics",
                    "jsonrpc": "2.0"}
    assert json.loads(json.dumps(ours)) == json.loads(json.dumps(CONVERTER.unstructure(note)))
