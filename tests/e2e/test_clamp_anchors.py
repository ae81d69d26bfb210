"""``budgetlens.clampAll`` and the clamp quick-fixes on a value shared through an anchor
defined outside ``settings`` (issue 30, case 16), end to end over LSP.

``defaults: &lim 8000`` is read by ``settings.max_context_tokens`` and by the runtime's
``retry.timeout_ms``: lowering it would change the timeout too, so nothing is edited, the
file on disk stays as it was and the editor shows why (the note the CLI prints).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from lsprotocol import types

from .harness import Editor, codes_of, running_server, td

# window 8192 (examples/config.json): fixed + 8000 + 100 + 128 is over it
ANCHORED = """\
defaults: &lim 8000
retry:
  timeout_ms: *lim
settings:
  max_context_tokens: *lim
steps:
  - id: answer
    type: call_model
    prompt_key: router
    max_output_tokens: 100
"""
REFUSAL = ("the value comes from anchor &lim at line 1, which also sets defaults; change it"
           " there by hand")


async def _run(ed: Editor, command: str, *arguments: object) -> Any:
    return await ed.client.workspace_execute_command_async(types.ExecuteCommandParams(
        command=command, arguments=list(arguments)))


async def test_clamp_all_refuses_an_anchor_outside_settings_and_says_why(
        workspace: Path) -> None:
    path = workspace / "pipelines" / "anchored.yaml"
    path.write_text(ANCHORED, "utf-8")
    async with running_server(workspace) as ed:
        uri = ed.open("pipelines/anchored.yaml")
        diags = await ed.wait_diagnostics(uri, lambda ds: "BL050" in codes_of(ds))
        result = await _run(ed, "budgetlens.clampAll", {"uri": uri})
        assert result["applied"] is False and result["changes"] == []
        assert REFUSAL in result["message"]
        assert "every step fits" not in result["message"]
        assert any(REFUSAL in m.message for m in ed.client.messages)  # shown to the user
        assert ed.applied_edits == []
        # no quick-fix edits the shared scalar either
        [diag] = [d for d in diags if d.code == "BL050"]
        actions = await ed.client.text_document_code_action_async(types.CodeActionParams(
            text_document=td(uri), range=diag.range,
            context=types.CodeActionContext(diagnostics=[diag])))
        for action in actions or []:
            assert isinstance(action, types.CodeAction)
            for change in (action.edit.document_changes or []) if action.edit else []:
                assert isinstance(change, types.TextDocumentEdit)
                assert all(e.range.start.line != 0 for e in change.edits
                           if isinstance(e, types.TextEdit)), action.title
    assert path.read_text("utf-8") == ANCHORED
