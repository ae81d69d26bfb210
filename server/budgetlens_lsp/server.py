"""The one place that registers pygls handlers and fans events out to the feature modules.

A feature's failure in a notification is logged and never stops the server; a request
handler's failure becomes an LSP error response (bad command arguments: "invalid params").
Requests that read analysis results go through :meth:`Session.query`, which flushes pending
edits and runs the feature on the analysis thread, so the message loop stays free.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import uuid
from collections.abc import Callable, Generator
from typing import Any

from lsprotocol import types
from pygls.exceptions import JsonRpcInvalidParams
from pygls.lsp.server import LanguageServer
from pygls.protocol import LanguageServerProtocol
from pygls.protocol.language_server import lsp_method

from budgetlens import __version__
from budgetlens.contract.check import find_pipelines
from budgetlens_lsp.convert import encoding_name, path_from_uri
from budgetlens_lsp.features import actions, commands, diagnostics, hover, lenses
from budgetlens_lsp.features.json_documents import CommandError
from budgetlens_lsp.session import Session
from budgetlens_lsp.settings import Settings, parse_settings
from budgetlens_lsp.workspace_index import FULL, INCREMENTAL, REDISCOVER, norm

log = logging.getLogger(__name__)

SECTION = "budgetlens"
#: Workspaces with more pipelines than this get a $/progress report while indexing.
LARGE_WORKSPACE = 20
WATCH_GLOBS = ("**/*.yaml", "**/*.yml", "**/*.txt", "**/*.json")


class ClientFeatures:
    """What the client said it can do, read once at ``initialize``."""

    def __init__(self, caps: types.ClientCapabilities) -> None:
        ws = caps.workspace
        td = caps.text_document
        win = caps.window
        self.pull = bool(td and td.diagnostic is not None)
        self.diagnostic_refresh = bool(ws and ws.diagnostics and ws.diagnostics.refresh_support)
        self.apply_edit = bool(ws and ws.apply_edit)
        self.document_changes = bool(ws and ws.workspace_edit
                                     and ws.workspace_edit.document_changes)
        self.configuration = bool(ws and ws.configuration)
        self.watch_registration = bool(ws and ws.did_change_watched_files
                                       and ws.did_change_watched_files.dynamic_registration)
        self.config_registration = bool(ws and ws.did_change_configuration
                                        and ws.did_change_configuration.dynamic_registration)
        self.lens_refresh = bool(ws and ws.code_lens and ws.code_lens.refresh_support)
        self.show_document = bool(win and win.show_document and win.show_document.support)
        self.progress = bool(win and win.work_done_progress)


class BudgetLensProtocol(LanguageServerProtocol):
    """pygls's protocol, except that pygls keeps no copy of a changed buffer.

    pygls applies incremental changes to lines cut by ``str.splitlines``, which also splits
    at U+2028, U+2029, U+0085 and other characters the LSP does not count as line ends,
    so its copy drifts from the editor's. The session applies the changes itself
    (``Session.change`` with ``convert.apply_changes``); ``ls.workspace``'s documents are
    not kept current and nothing reads them.
    """

    @lsp_method(types.TEXT_DOCUMENT_DID_CHANGE)
    def lsp_text_document__did_change(self, params: types.DidChangeTextDocumentParams
                                      ) -> Generator[Any, Any, None]:
        if (handler := self.fm.features.get(types.TEXT_DOCUMENT_DID_CHANGE)) is not None:
            yield handler, (params,), None


class BudgetLensServer(LanguageServer):
    def __init__(self) -> None:
        super().__init__("budgetlens", __version__,
                         text_document_sync_kind=types.TextDocumentSyncKind.Incremental,
                         protocol_cls=BudgetLensProtocol)
        self.session = Session()
        self.client = ClientFeatures(types.ClientCapabilities())
        self.init_settings: Any = None

    def report_server_error(self, error: Exception, source: Any) -> None:
        # Out-of-band errors are logged, never a popup on every keystroke.
        log.error("server error (%s): %s", getattr(source, "__name__", source), error)

    def message(self, text: str, kind: types.MessageType = types.MessageType.Warning) -> None:
        try:
            self.window_show_message(types.ShowMessageParams(type=kind, message=text))
        except Exception:  # no client attached (tests, shutdown)
            log.warning("%s", text)

    def apply_settings(self, raw: Any, *, source: str) -> None:
        settings, problems = parse_settings(raw)
        if problems:
            self.message(f"budgetlens: invalid settings ({source}): " + "; ".join(problems))
        if settings != self.session.settings:
            self.session.settings = settings
            self.session.mark_dirty([], FULL)


def _guard(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Run a notification feature; an exception is logged, the server goes on."""
    name = getattr(fn, "__name__", "feature")

    @functools.wraps(fn)
    def run(*args: Any) -> None:
        try:
            fn(*args)
        except Exception:
            log.exception("%s failed", name)
    return run


def _lsp_range(raw: Any) -> types.Range:
    def pos(p: Any) -> types.Position:
        line, character = p["line"], p["character"]
        if not all(isinstance(v, int) and not isinstance(v, bool) and v >= 0
                   for v in (line, character)):
            raise ValueError("positions are non-negative integers")
        return types.Position(line=line, character=character)
    return types.Range(start=pos(raw["start"]), end=pos(raw["end"]))


def _invalid(exc: Exception) -> JsonRpcInvalidParams:
    return JsonRpcInvalidParams(message=str(exc))


def create_server() -> BudgetLensServer:
    server = BudgetLensServer()
    session = server.session
    session.warm_up()

    pushed: set[str] = set()  # URIs whose last push was not empty

    async def publish(params_list: list[types.PublishDiagnosticsParams]) -> None:
        """Push to every client; a client that pulls gets its OPEN documents by pull only
        (so nothing is shown twice) and a refresh request instead."""
        for text in session.index.take_messages():  # budgetlens failed on a file (BL009)
            server.message(text, types.MessageType.Error)
        refresh = False
        for params in params_list:
            if server.client.pull and params.uri in session.documents:
                refresh = True
                if params.uri not in pushed:
                    continue
                params = types.PublishDiagnosticsParams(uri=params.uri, diagnostics=[])
            server.text_document_publish_diagnostics(params)
            if params.diagnostics:
                pushed.add(params.uri)
            else:
                pushed.discard(params.uri)
        if refresh and server.client.diagnostic_refresh:
            server.workspace_diagnostic_refresh(None)
        if server.client.lens_refresh:
            server.workspace_code_lens_refresh(None)

    session.on_results = publish

    # --- lifecycle --------------------------------------------------------------------------
    @server.feature(types.INITIALIZE)
    def initialize(ls: BudgetLensServer, params: types.InitializeParams) -> None:
        ls.client = ClientFeatures(params.capabilities)
        session.encoding = encoding_name(ls.workspace.position_encoding)
        ls.init_settings = params.initialization_options
        settings, problems = parse_settings(params.initialization_options)
        session.settings = settings
        if problems:
            log.warning("invalid initializationOptions: %s", "; ".join(problems))
        roots = [f.uri for f in params.workspace_folders or []]
        if not roots and params.root_uri:
            roots = [params.root_uri]
        if not roots and params.root_path:
            session.roots = [norm(params.root_path)]
        else:
            session.roots = [p for p in (session.path_of(uri) for uri in roots) if p]

    @server.feature(types.INITIALIZED)
    async def initialized(ls: BudgetLensServer, params: types.InitializedParams) -> None:
        if ls.init_settings is not None:
            _, problems = parse_settings(ls.init_settings)
            if problems:
                ls.message("budgetlens: invalid initializationOptions: " + "; ".join(problems))
        # indexing starts at once; the client's answers about watchers and settings arrive
        # meanwhile (a settings change re-checks everything)
        jobs = [_index_workspace(ls), _register_watchers(ls)]
        if ls.client.configuration:
            jobs.append(_pull_configuration(ls))
        for outcome in await asyncio.gather(*jobs, return_exceptions=True):
            if isinstance(outcome, BaseException):
                log.error("initialization step failed: %r", outcome)

    async def _register_watchers(ls: BudgetLensServer) -> None:
        registrations = []
        if ls.client.watch_registration:
            registrations.append(types.Registration(
                id=str(uuid.uuid4()), method=types.WORKSPACE_DID_CHANGE_WATCHED_FILES,
                register_options=types.DidChangeWatchedFilesRegistrationOptions(
                    watchers=[types.FileSystemWatcher(glob_pattern=g) for g in WATCH_GLOBS])))
        if ls.client.config_registration:
            registrations.append(types.Registration(
                id=str(uuid.uuid4()), method=types.WORKSPACE_DID_CHANGE_CONFIGURATION,
                register_options={"section": SECTION}))
        if registrations:
            try:
                await asyncio.wait_for(ls.client_register_capability_async(
                    types.RegistrationParams(registrations=registrations)), 5)
            except Exception as exc:
                log.warning("client/registerCapability failed: %s", exc)

    async def _pull_configuration(ls: BudgetLensServer) -> None:
        try:
            result = await asyncio.wait_for(ls.workspace_configuration_async(
                types.ConfigurationParams(items=[types.ConfigurationItem(section=SECTION)])), 5)
        except Exception as exc:
            log.warning("workspace/configuration failed: %s", exc)
            return
        value = result[0] if result else None
        if value is not None:
            ls.apply_settings(value, source="workspace/configuration")

    async def _index_workspace(ls: BudgetLensServer) -> None:
        token: str | None = None
        if ls.client.progress and session.roots:
            count = await session.run(
                lambda: sum(len(find_pipelines(r)) for r in session.roots))
            if count > LARGE_WORKSPACE:
                token = f"budgetlens-index-{uuid.uuid4()}"
                try:
                    await asyncio.wait_for(ls.work_done_progress.create_async(token), 5)
                    ls.work_done_progress.begin(token, types.WorkDoneProgressBegin(
                        title="budgetlens: checking pipelines", percentage=0,
                        message=f"0/{count}", cancellable=False))
                except Exception as exc:
                    log.warning("progress not available: %s", exc)
                    token = None
        loop = asyncio.get_running_loop()

        def hook() -> Callable[[int, int], None] | None:
            if token is None:
                return None

            def report(done: int, total: int) -> None:
                loop.call_soon_threadsafe(lambda: ls.work_done_progress.report(
                    token, types.WorkDoneProgressReport(
                        message=f"{done}/{total}",
                        percentage=int(100 * done / max(total, 1)))))
            return report

        session.progress_hook = hook
        session.mark_dirty([], FULL)
        try:
            await session.flush()
        finally:
            session.progress_hook = None
            if token is not None:
                ls.work_done_progress.end(token, types.WorkDoneProgressEnd(message="done"))

    @server.feature(types.SHUTDOWN)
    def shutdown(ls: BudgetLensServer, params: Any) -> None:
        session.shutdown()

    # --- documents --------------------------------------------------------------------------
    @server.feature(types.TEXT_DOCUMENT_DID_OPEN)
    @_guard
    def did_open(ls: BudgetLensServer, params: types.DidOpenTextDocumentParams) -> None:
        doc = params.text_document
        session.open(doc.uri, doc.version, doc.text, doc.language_id)

    @server.feature(types.TEXT_DOCUMENT_DID_CHANGE)
    @_guard
    def did_change(ls: BudgetLensServer, params: types.DidChangeTextDocumentParams) -> None:
        session.change(params.text_document.uri, params.text_document.version,
                       params.content_changes)

    @server.feature(types.TEXT_DOCUMENT_DID_SAVE)
    @_guard
    def did_save(ls: BudgetLensServer, params: types.DidSaveTextDocumentParams) -> None:
        path = session.path_of(params.text_document.uri)
        if path:  # the disk now has the buffer's text: dependents reading the disk update
            session.mark_dirty([path])

    @server.feature(types.TEXT_DOCUMENT_DID_CLOSE)
    @_guard
    def did_close(ls: BudgetLensServer, params: types.DidCloseTextDocumentParams) -> None:
        session.close(params.text_document.uri)

    @server.feature(types.WORKSPACE_DID_CHANGE_WATCHED_FILES)
    @_guard
    def did_change_watched(ls: BudgetLensServer,
                           params: types.DidChangeWatchedFilesParams) -> None:
        paths: list[str] = []
        mode = INCREMENTAL
        for change in params.changes:
            p = path_from_uri(change.uri)
            if p is None:
                continue
            paths.append(norm(p))
            if change.type != types.FileChangeType.Changed:
                mode = REDISCOVER
        if paths:
            session.mark_dirty(paths, mode)

    @server.feature(types.WORKSPACE_DID_CHANGE_WORKSPACE_FOLDERS)
    @_guard
    def did_change_folders(ls: BudgetLensServer,
                           params: types.DidChangeWorkspaceFoldersParams) -> None:
        uris = [f.uri for f in ls.workspace.folders.values()]
        if not uris and ls.workspace.root_uri:
            uris = [ls.workspace.root_uri]
        session.roots = [r for r in (session.path_of(u) for u in uris) if r]
        session.mark_dirty([], FULL)

    @server.feature(types.WORKSPACE_DID_CHANGE_CONFIGURATION)
    async def did_change_configuration(ls: BudgetLensServer,
                                       params: types.DidChangeConfigurationParams) -> None:
        try:
            raw = params.settings
            if isinstance(raw, dict) and SECTION in raw:
                ls.apply_settings(raw[SECTION], source="didChangeConfiguration")
            elif ls.client.configuration:
                await _pull_configuration(ls)
            elif raw is None:
                ls.apply_settings(ls.init_settings, source="initializationOptions")
        except Exception:
            log.exception("applying the configuration change failed")

    # --- diagnostics (pull) -----------------------------------------------------------------
    @server.feature(types.TEXT_DOCUMENT_DIAGNOSTIC, types.DiagnosticOptions(
        identifier="budgetlens", inter_file_dependencies=True, workspace_diagnostics=False))
    async def document_diagnostic(ls: BudgetLensServer, params: types.DocumentDiagnosticParams
                                  ) -> types.DocumentDiagnosticReport:
        path = session.path_of(params.text_document.uri)
        return await session.query(diagnostics.document_report, session.index, path,
                                   params.previous_result_id)

    # --- lenses, hover, actions -------------------------------------------------------------
    def _check(uri: str) -> str:
        """What a URI may read (``commands.command_target``: an open document, or a file
        inside the workspace folders); ``CommandError`` naming the rule otherwise."""
        return commands.command_target(
            uri, {u: d.path for u, d in session.documents.items()}, session.roots,
            {d.path for d in session.documents.values()})

    def _readable(uri: str) -> str | None:
        """The key of a document lenses, hover and code actions may read, by the commands'
        rule; None (the request answers with nothing) for anything else."""
        try:
            return _check(uri)
        except CommandError:
            return None

    @server.feature(types.TEXT_DOCUMENT_CODE_LENS)
    async def code_lens(ls: BudgetLensServer, params: types.CodeLensParams
                        ) -> list[types.CodeLens]:
        uri = params.text_document.uri
        return await session.query(lenses.code_lenses, session.index, _readable(uri), uri)

    @server.feature(types.TEXT_DOCUMENT_HOVER)
    async def on_hover(ls: BudgetLensServer, params: types.HoverParams) -> types.Hover | None:
        path = _readable(params.text_document.uri)
        return await session.query(hover.hover, session.index, path, params.position)

    @server.feature(types.TEXT_DOCUMENT_CODE_ACTION, types.CodeActionOptions(
        code_action_kinds=[types.CodeActionKind.QuickFix, actions.FIX_ALL],
        resolve_provider=False))
    async def code_action(ls: BudgetLensServer, params: types.CodeActionParams
                          ) -> list[types.CodeAction]:
        uri = params.text_document.uri
        ctx = actions.EditContext(session.versions(), ls.client.document_changes)
        return await session.query(actions.code_actions, session.index, _readable(uri),
                                   uri, params, ctx)

    # --- commands ---------------------------------------------------------------------------
    def _target(args: tuple[Any, ...]) -> tuple[dict[str, Any], str, str]:
        try:
            arg = commands.single_object(args)
        except CommandError as exc:
            raise _invalid(exc) from None
        uri = arg["uri"]
        try:
            path = _check(uri)
        except CommandError as exc:
            raise _invalid(exc) from None
        return arg, uri, path

    async def _query(fn: Callable[..., Any], *args: Any) -> Any:
        try:
            return await session.query(fn, *args)
        except CommandError as exc:
            raise _invalid(exc) from None

    @server.command(commands.SHOW_HIERARCHY)
    async def show_hierarchy(ls: BudgetLensServer, *args: Any) -> dict[str, Any]:
        arg, uri, path = _target(args)
        result: dict[str, Any] = await _query(commands.show_hierarchy, session.index, path,
                                              uri, arg)
        return result

    @server.command(commands.SHOW_REPORT)
    async def show_report(ls: BudgetLensServer, *args: Any) -> dict[str, Any]:
        _, uri, path = _target(args)
        result: dict[str, Any] = await _query(commands.budget_report, session.index, path, uri)
        return result

    @server.command(commands.CLAMP_ALL)
    async def clamp_all(ls: BudgetLensServer, *args: Any) -> dict[str, Any]:
        arg, uri, path = _target(args)
        plan = await _query(commands.clamp_all_plan, session.index, path, uri, arg)
        open_paths = {d.path for d in session.documents.values()}
        for file in plan.files:  # the edits obey the same rule as the reads
            reason = None if norm(file) in open_paths else commands.outside_reason(
                norm(file), session.roots)
            if reason is not None:
                raise _invalid(CommandError(
                    f"the clamp plan edits {file}, which {reason}; {commands.READ_RULE}"
                    "; nothing was applied"))
        changes = [c.to_dict() for c in plan.changes]
        if plan.empty:
            message = "nothing to clamp: every step fits" + (
                f" ({'; '.join(plan.notes)})" if plan.notes else "")
            return {"applied": False, "changes": [], "message": message}
        if not ls.client.apply_edit:
            message = ("budgetlens: this editor cannot apply workspace edits"
                       " (workspace.applyEdit); use the quick-fixes or `budgetlens clamp"
                       " --write` instead")
            ls.message(message, types.MessageType.Info)
            return {"applied": False, "changes": changes, "message": message}
        ctx = actions.EditContext(session.versions(), ls.client.document_changes)
        edit = await session.run(actions.workspace_edit, session.index, plan, ctx)
        result = await ls.workspace_apply_edit_async(types.ApplyWorkspaceEditParams(
            edit=edit, label=f"budgetlens: clamp {plan.pipeline}"))
        message = "clamped" if result.applied else (
            f"the editor did not apply the edit: {result.failure_reason or 'no reason given'}")
        return {"applied": bool(result.applied), "changes": changes, "message": message}

    @server.command(commands.SHOW_LOCATION)
    async def show_location(ls: BudgetLensServer, *args: Any) -> dict[str, Any]:
        arg, uri, _ = _target(args)
        try:
            rng = _lsp_range(arg["range"]) if arg.get("range") is not None else None
        except (KeyError, TypeError, ValueError):
            raise _invalid(CommandError("\"range\" must be an LSP range")) from None
        if not ls.client.show_document:
            return {"shown": False, "uri": uri, "range": arg.get("range")}
        result = await ls.window_show_document_async(types.ShowDocumentParams(
            uri=uri, take_focus=True, selection=rng))
        return {"shown": bool(result.success), "uri": uri, "range": arg.get("range")}

    return server


__all__ = ["BudgetLensServer", "Settings", "create_server"]
