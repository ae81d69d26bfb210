"""The near-miss key quick-fix (BL008), end to end over LSP.

A child pipeline sets ``max_context_token: 3000`` (a typo): the server warns at the key, the
budget still uses the inherited 4096. The client asks for code actions on the warning's range
*without* the diagnostic's ``data`` (as some clients send it), applies the returned edit,
sends didChange, and the warning is gone and the budget uses 3000.
"""

from __future__ import annotations

from pathlib import Path

from lsprotocol import types

from . import expected
from .harness import Editor, codes_of, find, running_server, td

CHILD = "pipelines/multilingual.yaml"
SETTINGS = "settings:\n  max_context_token: 3000\n"


def _with_typo(workspace: Path) -> str:
    path = workspace / CHILD
    text = path.read_text("utf-8").replace("extends: base.yaml\n",
                                           "extends: base.yaml\n" + SETTINGS, 1)
    path.write_text(text, "utf-8")
    return text


async def _actions_without_data(ed: Editor, uri: str, diag: types.Diagnostic
                                ) -> list[types.CodeAction]:
    stripped = types.Diagnostic(range=diag.range, message=diag.message,
                                severity=diag.severity, code=diag.code, source=diag.source)
    assert stripped.data is None
    result = await ed.client.text_document_code_action_async(types.CodeActionParams(
        text_document=td(uri), range=diag.range,
        context=types.CodeActionContext(diagnostics=[stripped])))
    return [a for a in result or [] if isinstance(a, types.CodeAction)]


async def _lens_title(ed: Editor, uri: str, line: int) -> str:
    lenses = await ed.client.text_document_code_lens_async(types.CodeLensParams(
        text_document=td(uri)))
    [lens] = [x for x in lenses or [] if x.range.start.line == line]
    assert lens.command is not None
    return lens.command.title


async def test_rename_fix_renames_the_key_and_the_budget_uses_its_value(
        workspace: Path) -> None:
    text = _with_typo(workspace)
    assert text.splitlines()[3] == "  max_context_token: 3000"  # line 3, key at 2..19
    step_line, _ = find(text, "- name: answer_ja")
    async with running_server(workspace) as ed:
        uri = ed.open(CHILD)
        diags = await ed.wait_diagnostics(uri, lambda ds: "BL008" in codes_of(ds))
        [warning] = [d for d in diags if d.code == "BL008"]
        # a near miss of a key that sets a budget term is an error (issue 30, case 15)
        assert warning.severity == types.DiagnosticSeverity.Error
        assert warning.message == ("unknown key 'max_context_token': did you mean"
                                   " 'max_context_tokens'? It sets a budget term: until it is"
                                   " renamed, the budget ignores this value")
        assert warning.range == types.Range(start=types.Position(line=3, character=2),
                                            end=types.Position(line=3, character=19))
        # the typo is ignored: the inherited 4096 is what the budget uses
        before = expected.answer_ja(workspace, context=4096)
        assert await _lens_title(ed, uri, step_line) == before.lens()

        actions = await _actions_without_data(ed, uri, warning)
        [fix] = [a for a in actions if a.title.startswith("Rename")]
        assert fix.title == "Rename 'max_context_token' to 'max_context_tokens'"
        assert fix.kind == types.CodeActionKind.QuickFix and fix.edit is not None
        [change] = fix.edit.document_changes or []
        assert isinstance(change, types.TextDocumentEdit)
        [edit] = change.edits
        assert edit.range == warning.range and edit.new_text == "max_context_tokens"
        ed.apply(fix.edit)
        assert ed.texts[uri] == text.replace("max_context_token:", "max_context_tokens:")

        await ed.wait_diagnostics(uri, lambda ds: "BL008" not in codes_of(ds))
        after = expected.answer_ja(workspace, context=3000)
        assert await _lens_title(ed, uri, step_line) == after.lens()


async def test_a_quoted_config_key_is_renamed_inside_its_quotes(workspace: Path) -> None:
    config = workspace / "config.json"
    text = config.read_text("utf-8").replace('"model_max_tokens"', '"model_max_token"')
    config.write_text(text, "utf-8")
    line, col = find(text, '"model_max_token"')
    assert (line, col) == (2, 2)
    async with running_server(workspace) as ed:
        ed.open(CHILD)
        uri = ed.open("config.json", language_id="json")
        diags = await ed.wait_diagnostics(uri, lambda ds: "BL008" in codes_of(ds))
        [warning] = [d for d in diags if d.code == "BL008"]
        # the key's characters, without the quotes: columns 3..18
        assert warning.range == types.Range(start=types.Position(line=2, character=3),
                                            end=types.Position(line=2, character=18))
        # no diagnostics in the context at all: the fix comes from the range alone
        result = await ed.client.text_document_code_action_async(types.CodeActionParams(
            text_document=td(uri), range=types.Range(start=types.Position(line=2, character=5),
                                                     end=types.Position(line=2, character=5)),
            context=types.CodeActionContext(diagnostics=[])))
        [fix] = [a for a in result or [] if isinstance(a, types.CodeAction)
                 and a.title == "Rename 'model_max_token' to 'model_max_tokens'"]
        assert fix.edit is not None
        ed.apply(fix.edit)
        assert ed.texts[uri] == text.replace('"model_max_token"', '"model_max_tokens"')
        await ed.wait_diagnostics(uri, lambda ds: "BL008" not in codes_of(ds))
