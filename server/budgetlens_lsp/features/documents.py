"""Text synchronisation and the files around it: open, change, save and close of documents,
watched files and workspace folders. Each marks what changed in the session, which
schedules the analysis."""

from __future__ import annotations

from pathlib import Path

from lsprotocol import types

from budgetlens_lsp.convert import path_from_uri
from budgetlens_lsp.features.state import ServerState
from budgetlens_lsp.workspace_index import IndexMode, norm


def did_open(ctx: ServerState, params: types.DidOpenTextDocumentParams) -> None:
    doc = params.text_document
    ctx.session.open(doc.uri, doc.version, doc.text, doc.language_id)


def did_change(ctx: ServerState, params: types.DidChangeTextDocumentParams) -> None:
    ctx.session.change(params.text_document.uri, params.text_document.version,
                       params.content_changes)


def did_save(ctx: ServerState, params: types.DidSaveTextDocumentParams) -> None:
    path = ctx.session.path_of(params.text_document.uri)
    if path:  # the disk now has the buffer's text: dependents reading the disk update
        ctx.session.mark_dirty([path])


def did_close(ctx: ServerState, params: types.DidCloseTextDocumentParams) -> None:
    ctx.session.close(params.text_document.uri)


def did_change_watched_files(ctx: ServerState,
                             params: types.DidChangeWatchedFilesParams) -> None:
    """A changed file re-checks what reads it; a created or deleted one rediscovers, and so
    does a changed ignore file (what the search skips may have changed)."""
    paths: list[str] = []
    mode = IndexMode.INCREMENTAL
    for change in params.changes:
        p = path_from_uri(change.uri)
        if p is None:
            continue
        paths.append(norm(p))
        if change.type != types.FileChangeType.Changed or ignores_files(p):
            mode = IndexMode.REDISCOVER
    if paths:
        ctx.session.mark_dirty(paths, mode)


def ignores_files(path: Path) -> bool:
    """Whether ``path`` is a ``.gitignore`` or a ``.git/info/exclude``."""
    return path.name == ".gitignore" or path.parts[-3:] == (".git", "info", "exclude")


def did_change_folders(ctx: ServerState,
                       params: types.DidChangeWorkspaceFoldersParams) -> None:
    """The folders as pygls now knows them (it applied the change) become the roots."""
    workspace = ctx.server.workspace
    uris = [f.uri for f in workspace.folders.values()]
    if not uris and workspace.root_uri:
        uris = [workspace.root_uri]
    ctx.session.roots = [r for r in (ctx.session.path_of(u) for u in uris) if r]
    ctx.session.mark_dirty([], IndexMode.FULL)
