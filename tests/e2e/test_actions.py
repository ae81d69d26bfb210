"""Quick-fixes from the clamp plan and ``source.fixAll.budgetlens``.

Each fix: ask for code actions on the diagnostic, apply the returned WorkspaceEdit to the
text (open buffers get a didChange), and check that the diagnostic is gone. The expected
numbers are the contract's arithmetic done here by hand: lowering max_context_tokens so the
worst step fits gives ``window - (fixed + history + output + margin)``; lowering one step's
output gives ``output + headroom``.
"""

from __future__ import annotations

from pathlib import Path

from lsprotocol import types

from . import expected
from .harness import Editor, RecordedClient, caps, codes_of, running_server, td


async def _actions(ed: Editor, uri: str, diag: types.Diagnostic,
                   only: list[str] | None = None) -> list[types.CodeAction]:
    result = await ed.client.text_document_code_action_async(types.CodeActionParams(
        text_document=td(uri), range=diag.range,
        context=types.CodeActionContext(diagnostics=[diag], only=only)))
    return [a for a in result or [] if isinstance(a, types.CodeAction)]


async def _bl050(ed: Editor, uri: str) -> types.Diagnostic:
    diags = await ed.wait_diagnostics(uri, lambda ds: "BL050" in codes_of(ds))
    return next(d for d in diags if d.code == "BL050")


def _gone(diags: list[types.Diagnostic]) -> bool:
    return "BL050" not in codes_of(diags)


async def _open_over(ed: Editor, path: str) -> tuple[str, str, types.Diagnostic]:
    """Open ``path``: its URI, its text as opened, and its BL050 once published."""
    uri = ed.open(path)
    return uri, ed.texts[uri], await _bl050(ed, uri)


async def test_clamp_context_in_this_file_removes_the_diagnostic(
        recorded: RecordedClient, workspace: Path) -> None:
    b = expected.write_report(workspace)
    new_context = expected.WINDOW - (b.fixed + b.history + b.output + b.margin)
    async with running_server(workspace, recorded=recorded) as ed:
        uri, before, diag = await _open_over(ed, "pipelines/long_report.yaml")
        actions = await _actions(ed, uri, diag)
        [fix] = [a for a in actions if "max_context_tokens" in a.title
                 and a.kind == types.CodeActionKind.QuickFix]
        assert fix.kind == types.CodeActionKind.QuickFix and fix.edit is not None
        assert f"6144 → {new_context}" in fix.title
        ed.apply(fix.edit)
        assert ed.texts[uri] == before.replace("max_context_tokens: 6144",
                                               f"max_context_tokens: {new_context}")
        await ed.wait_diagnostics(uri, _gone)


async def test_clamp_this_steps_output_removes_the_diagnostic(
        recorded: RecordedClient, workspace: Path) -> None:
    b = expected.write_report(workspace)
    new_output = b.output + b.headroom
    async with running_server(workspace, recorded=recorded) as ed:
        uri, before, diag = await _open_over(ed, "pipelines/long_report.yaml")
        [fix] = [a for a in await _actions(ed, uri, diag, only=["quickfix"])
                 if "write_report" in a.title]
        assert f"2048 → {new_output}" in fix.title
        assert fix.edit is not None
        ed.apply(fix.edit)
        assert ed.texts[uri] == before.replace("max_output_tokens: 2048",
                                               f"max_output_tokens: {new_output}")
        await ed.wait_diagnostics(uri, _gone)


def _overflow_support(workspace: Path) -> None:
    path = workspace / "pipelines/support.yaml"
    path.write_text(path.read_text("utf-8").replace("max_context_tokens: 3072",
                                                    "max_context_tokens: 7000"), "utf-8")


def _overflow_multilingual(workspace: Path) -> None:
    path = workspace / "pipelines/multilingual.yaml"
    path.write_text(path.read_text("utf-8").replace("max_output_tokens: 800",
                                                    "max_output_tokens: 4000"), "utf-8")


async def test_inherited_context_is_overridden_in_the_child(
        recorded: RecordedClient, workspace: Path) -> None:
    _overflow_multilingual(workspace)
    b = expected.answer_ja(workspace, output=4000)
    assert b.headroom < 0
    new_context = expected.WINDOW - (b.fixed + b.output + b.margin)
    async with running_server(workspace, recorded=recorded) as ed:
        uri, before, diag = await _open_over(ed, "pipelines/multilingual.yaml")
        [fix] = [a for a in await _actions(ed, uri, diag) if "override here" in a.title]
        assert fix.edit is not None
        ed.apply(fix.edit)
        # one inserted block right after the extends line; nothing else changes
        assert ed.texts[uri] == before.replace(
            "extends: base.yaml\n",
            f"extends: base.yaml\nsettings:\n  max_context_tokens: {new_context}\n", 1)
        await ed.wait_diagnostics(uri, _gone)
    assert "max_context_tokens: 4096" in (workspace / "pipelines/base.yaml").read_text("utf-8")


async def test_inherited_context_fixed_in_the_parent_is_a_versioned_cross_file_edit(
        recorded: RecordedClient, workspace: Path) -> None:
    _overflow_multilingual(workspace)
    b = expected.answer_ja(workspace, output=4000)
    new_context = expected.WINDOW - (b.fixed + b.output + b.margin)
    async with running_server(workspace, recorded=recorded) as ed:
        base = ed.open("pipelines/base.yaml")
        uri = ed.open("pipelines/multilingual.yaml")
        base_before, child_before = ed.texts[base], ed.texts[uri]
        ed.replace_all(base, base_before)  # version 2: the edit must carry it
        diag = await _bl050(ed, uri)
        [fix] = [a for a in await _actions(ed, uri, diag) if "in base.yaml" in a.title]
        workspace_caps = recorded.capabilities.workspace
        if workspace_caps and workspace_caps.workspace_edit \
                and workspace_caps.workspace_edit.document_changes:
            assert fix.edit is not None and fix.edit.document_changes
            [change] = fix.edit.document_changes
            assert isinstance(change, types.TextDocumentEdit)
            assert change.text_document.uri == base and change.text_document.version == 2
        else:
            # per client: Neovim (0.7.2 and 0.11.4) declares no documentChanges, so the
            # cross-file edit is a plain changes map of the parent alone, unversioned
            assert fix.edit is not None and not fix.edit.document_changes
            assert list(fix.edit.changes or {}) == [base]
        ed.apply(fix.edit)
        assert ed.texts[base] == base_before.replace("max_context_tokens: 4096",
                                                     f"max_context_tokens: {new_context}")
        assert ed.texts[uri] == child_before
        await ed.wait_diagnostics(uri, _gone)


async def test_inherited_context_in_a_closed_parent_uses_a_plain_changes_map(
        workspace: Path) -> None:
    """Clients without documentChanges get ``changes``; the parent is closed (no version)."""
    _overflow_multilingual(workspace)
    async with running_server(workspace, capabilities=caps(document_changes=False)) as ed:
        uri = ed.open("pipelines/multilingual.yaml")
        diag = await _bl050(ed, uri)
        [fix] = [a for a in await _actions(ed, uri, diag) if "in base.yaml" in a.title]
        assert fix.edit is not None and fix.edit.changes and not fix.edit.document_changes
        assert list(fix.edit.changes) == [ed.uri("pipelines/base.yaml")]
        ed.apply(fix.edit)  # written to disk: tell the server like a file watcher would
        ed.client.workspace_did_change_watched_files(types.DidChangeWatchedFilesParams(
            changes=[types.FileEvent(uri=ed.uri("pipelines/base.yaml"),
                                     type=types.FileChangeType.Changed)]))
        await ed.wait_diagnostics(uri, _gone)


async def test_inherited_step_output_is_clamped_by_copying_the_steps_or_in_the_parent(
        recorded: RecordedClient, workspace: Path) -> None:
    _overflow_support(workspace)
    b = expected.answer(workspace, context=7000)
    new_output = b.output + b.headroom
    async with running_server(workspace, recorded=recorded) as ed:
        uri = ed.open("pipelines/support.yaml")
        base = ed.open("pipelines/base.yaml")
        before, base_before = ed.texts[uri], ed.texts[base]
        diag = await _bl050(ed, uri)
        titles = [a.title for a in await _actions(ed, uri, diag)]
        outputs = [t for t in titles if "of step 'answer'" in t]
        assert len(outputs) == 2 and all(f"1024 → {new_output}" in t for t in outputs)
        [copy] = [a for a in await _actions(ed, uri, diag) if "copy the inherited" in a.title]
        assert copy.edit is not None
        ed.apply(copy.edit)
        new = ed.texts[uri]
        assert new.startswith(before.rstrip("\n"))  # only an appended block
        assert f"max_output_tokens: {new_output}" in new[len(before.rstrip()):]
        assert ed.texts[base] == base_before
        await ed.wait_diagnostics(uri, _gone)


async def test_fix_all_applies_the_whole_plan(
        recorded: RecordedClient, workspace: Path) -> None:
    b = expected.write_report(workspace)
    new_context = expected.WINDOW - (b.fixed + b.history + b.output + b.margin)
    async with running_server(workspace, recorded=recorded) as ed:
        uri, before, diag = await _open_over(ed, "pipelines/long_report.yaml")
        actions = await _actions(ed, uri, diag, only=["source.fixAll.budgetlens"])
        [fix] = actions
        assert fix.kind == "source.fixAll.budgetlens" and fix.edit is not None
        ed.apply(fix.edit)
        assert ed.texts[uri] == before.replace("max_context_tokens: 6144",
                                               f"max_context_tokens: {new_context}")
        await ed.wait_diagnostics(uri, _gone)
        # nothing left to fix: no fixAll action any more
        assert await _actions(ed, uri, diag, only=["source.fixAll"]) == []


async def test_quickfix_kinds_are_filtered_by_only(
        recorded: RecordedClient, workspace: Path) -> None:
    async with running_server(workspace, recorded=recorded) as ed:
        uri = ed.open("pipelines/long_report.yaml")
        diag = await _bl050(ed, uri)
        quick = await _actions(ed, uri, diag, only=[types.CodeActionKind.QuickFix])
        assert quick and all(a.kind == types.CodeActionKind.QuickFix for a in quick)


async def test_inherited_step_output_fixed_in_the_parent(
        recorded: RecordedClient, workspace: Path) -> None:
    (workspace.parent / "original-base.yaml").write_text(
        (workspace / "pipelines/base.yaml").read_text("utf-8"), "utf-8")
    _overflow_support(workspace)
    b = expected.answer(workspace, context=7000)
    new_output = b.output + b.headroom
    async with running_server(workspace, recorded=recorded) as ed:
        uri, before, diag = await _open_over(ed, "pipelines/support.yaml")
        [fix] = [a for a in await _actions(ed, uri, diag)
                 if "of step 'answer'" in a.title and "in base.yaml" in a.title]
        assert fix.edit is not None
        ed.apply(fix.edit)  # base.yaml is closed: written to disk, then the watcher event
        ed.client.workspace_did_change_watched_files(types.DidChangeWatchedFilesParams(
            changes=[types.FileEvent(uri=ed.uri("pipelines/base.yaml"),
                                     type=types.FileChangeType.Changed)]))
        await ed.wait_diagnostics(uri, _gone)
        assert ed.texts[uri] == before
    base = (workspace / "pipelines/base.yaml").read_text("utf-8")
    assert base == (workspace.parent / "original-base.yaml").read_text("utf-8").replace(
        "max_output_tokens: 1024", f"max_output_tokens: {new_output}")


async def test_output_above_the_model_ceiling_has_its_own_fix(
        recorded: RecordedClient, workspace: Path) -> None:
    path = workspace / "pipelines/long_report.yaml"
    path.write_text(path.read_text("utf-8").replace("max_output_tokens: 2048",
                                                    "max_output_tokens: 5000"), "utf-8")
    # the ceiling (4096) first; with the context held at 6144 the step would need an output
    # of 4096 + its headroom at 4096 (1819), below its floor min_output_tokens (half of 4096 =
    # 2048): the fix lowers the output to the ceiling only, and BL050 stays for the context
    b = expected.write_report(workspace, output=4096)
    assert b.output + b.headroom < 4096 // 2
    new_output = 4096
    async with running_server(workspace, recorded=recorded) as ed:
        uri = ed.open("pipelines/long_report.yaml")
        before = ed.texts[uri]
        diags = await ed.wait_diagnostics(uri, lambda ds: "BL051" in codes_of(ds))
        ceiling = next(d for d in diags if d.code == "BL051")
        [fix] = await _actions(ed, uri, ceiling, only=["quickfix"])
        assert fix.is_preferred and fix.edit is not None
        assert f"5000 → {new_output}" in fix.title
        ed.apply(fix.edit)
        assert ed.texts[uri] == before.replace("max_output_tokens: 5000",
                                               f"max_output_tokens: {new_output}")
        await ed.wait_diagnostics(uri, lambda ds: "BL051" not in codes_of(ds)
                                  and "BL050" in codes_of(ds))
