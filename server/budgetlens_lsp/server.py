"""The one place that registers pygls handlers and fans events out to the feature modules.

Each handler is a line or three calling a feature (``budgetlens_lsp.features``), with the
one :class:`ServerState` built here. A feature's failure in a notification is logged and
never stops the server; a request handler's failure becomes an LSP error response (bad
command arguments: "invalid params"). Requests that read analysis results go through
:meth:`Session.query`, which flushes pending edits and runs the feature on the analysis
thread, so the message loop stays free.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import sys
import time
from collections.abc import Awaitable, Callable
from typing import Any

from lsprotocol import types
from pygls.lsp.server import LanguageServer

from budgetlens.tokens import core as tokens_core
from budgetlens.tokens import counts as token_counts
from budgetlens.tokens.core import DEFAULT_TOKENIZER, get_tokenizer
from budgetlens_lsp import __version__, stdio
from budgetlens_lsp.features import (
    actions,
    commands,
    diagnostics,
    documents,
    hover,
    lenses,
    lifecycle,
    models,
)
from budgetlens_lsp.features.state import Analysis, ServerState
from budgetlens_lsp.protocol import BudgetLensProtocol
from budgetlens_lsp.session import Session

log = logging.getLogger(__name__)


class BudgetLensServer(LanguageServer):
    def __init__(self) -> None:
        super().__init__("budgetlens", __version__,
                         text_document_sync_kind=types.TextDocumentSyncKind.Incremental,
                         protocol_cls=BudgetLensProtocol)
        analysis = Analysis()
        self.ctx = ServerState(self, Session(functools.partial(diagnostics.analyze, analysis)),
                                 analysis)
        self.ctx.session.on_results = self.published
        self._first_published = False
        self._counts_saved = 0.0  # time.monotonic() of the last write of the count cache
        self._tasks: set[asyncio.Future[None]] = set()

    async def published(self, results: diagnostics.Batch) -> None:
        """After each analysis (on the loop): the features that show its results; then,
        off the critical path, the persistent count cache's upkeep."""
        diagnostics.publish(self.ctx, results.publish)
        lenses.refresh(self.ctx)
        now = time.monotonic()
        if not self._first_published:
            self._first_published = True
            self._counts_saved = now
            log.info("first diagnostics published; tokenizer encodings built: %d",
                     tokens_core.encodings_built)
            self._upkeep(after_first_publish)
        elif now - self._counts_saved >= SAVE_COUNTS_EVERY_S and token_counts.pending():
            self._counts_saved = now
            self._upkeep(save_counts)

    def _upkeep(self, fn: Callable[[], None]) -> None:
        """Run ``fn`` on the analysis thread after what is queued, without waiting for it."""
        async def run() -> None:
            # RuntimeError: the session is shut down (exit writes the counts)
            with contextlib.suppress(RuntimeError):
                await self.ctx.session.run(fn)
        task = asyncio.ensure_future(run())
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def start_io(self, stdin: Any = None, stdout: Any = None) -> None:
        """pygls's stdio loop, with standard input read by the event loop when it is a
        pipe or a socket (``stdio``); after ``exit`` the process ends with the code LSP
        prescribes (0 after ``shutdown``, 1 without: ``protocol.BudgetLensProtocol``)."""
        source, sink = stdin or sys.stdin.buffer, stdout or sys.stdout.buffer
        try:
            if stdio.loop_readable(source, sink):
                stdio.serve(self, source, sink)
            else:
                super().start_io(stdin, stdout)
        finally:
            save_counts()  # the counts added since the last write
        code = self.protocol.exit_code if isinstance(self.protocol, BudgetLensProtocol) \
            else None
        if code is not None:
            sys.exit(code)

    def start_tcp(self, host: str, port: int) -> None:
        try:
            super().start_tcp(host, port)
        finally:
            save_counts()

    def report_server_error(self, error: Exception, source: Any) -> None:
        # Out-of-band errors are logged, never a popup on every keystroke.
        log.error("server error (%s): %s", getattr(source, "__name__", source), error)


#: Seconds between two writes of the persistent count cache while counts are added (so a
#: crash loses little); it is also written after the first diagnostics and at exit.
SAVE_COUNTS_EVERY_S = 30.0


def save_counts() -> None:
    """Write the new counts of the persistent count cache (never raises)."""
    try:
        token_counts.flush()
    except Exception:
        log.exception("writing the token count cache failed")


def after_first_publish() -> None:
    """On the analysis thread, once the first diagnostics are out: build the default
    encoding if a warm start did without it (so the first keystroke that needs it does not
    pay for it), and write the counts the first check added."""
    try:
        tokenizer = get_tokenizer(DEFAULT_TOKENIZER)
        if isinstance(tokenizer, tokens_core.TiktokenTokenizer):
            tokenizer.encode("")
    except Exception:  # a broken install shows up in the check's diagnostics
        log.exception("loading the default tokenizer failed")
    save_counts()


def _guard(fn: Callable[[ServerState, Any], None], ctx: ServerState
           ) -> Callable[[Any], None]:
    """A notification handler running ``fn(ctx, params)``; an exception is logged, the
    server goes on."""
    def run(params: Any) -> None:
        try:
            fn(ctx, params)
        except Exception:
            log.exception("%s failed", fn.__name__)
    return run


def create_server() -> BudgetLensServer:
    server = BudgetLensServer()
    ctx = server.ctx
    ctx.session.warm_up()
    _register_lifecycle(server, ctx)
    _register_documents(server, ctx)
    _register_requests(server, ctx)
    _register_commands(server, ctx)
    return server


def _register_lifecycle(server: BudgetLensServer, ctx: ServerState) -> None:
    @server.feature(types.INITIALIZE)
    def initialize(ls: BudgetLensServer, params: types.InitializeParams) -> None:
        lifecycle.initialize(ctx, params)

    @server.feature(types.INITIALIZED)
    async def initialized(ls: BudgetLensServer, params: types.InitializedParams) -> None:
        await lifecycle.initialized(ctx, params)

    @server.feature(types.SHUTDOWN)
    def shutdown(ls: BudgetLensServer, params: Any) -> None:
        lifecycle.shutdown(ctx, params)

    @server.feature(types.WORKSPACE_DID_CHANGE_CONFIGURATION)
    async def did_change_configuration(ls: BudgetLensServer,
                                       params: types.DidChangeConfigurationParams) -> None:
        await lifecycle.did_change_configuration(ctx, params)


def _register_documents(server: BudgetLensServer, ctx: ServerState) -> None:
    for method, fn in ((types.TEXT_DOCUMENT_DID_OPEN, documents.did_open),
                       (types.TEXT_DOCUMENT_DID_CHANGE, documents.did_change),
                       (types.TEXT_DOCUMENT_DID_SAVE, documents.did_save),
                       (types.TEXT_DOCUMENT_DID_CLOSE, documents.did_close),
                       (types.WORKSPACE_DID_CHANGE_WATCHED_FILES,
                        documents.did_change_watched_files),
                       (types.WORKSPACE_DID_CHANGE_WORKSPACE_FOLDERS,
                        documents.did_change_folders)):
        server.feature(method)(_guard(fn, ctx))


def _register_requests(server: BudgetLensServer, ctx: ServerState) -> None:
    @server.feature(types.TEXT_DOCUMENT_DIAGNOSTIC, types.DiagnosticOptions(
        identifier="budgetlens", inter_file_dependencies=True, workspace_diagnostics=False))
    async def document_diagnostic(ls: BudgetLensServer, params: types.DocumentDiagnosticParams
                                  ) -> types.DocumentDiagnosticReport:
        return await diagnostics.pull(ctx, params)

    @server.feature(types.TEXT_DOCUMENT_CODE_LENS)
    async def code_lens(ls: BudgetLensServer, params: types.CodeLensParams
                        ) -> list[types.CodeLens]:
        return [*await lenses.on_code_lens(ctx, params), *await models.on_code_lens(ctx, params)]

    @server.feature(types.TEXT_DOCUMENT_HOVER)
    async def on_hover(ls: BudgetLensServer, params: types.HoverParams) -> types.Hover | None:
        return await hover.on_hover(ctx, params) or await models.on_hover(ctx, params)

    @server.feature(types.TEXT_DOCUMENT_COMPLETION, types.CompletionOptions(
        trigger_characters=[":", " ", '"']))
    async def completion(ls: BudgetLensServer, params: types.CompletionParams
                         ) -> types.CompletionList | None:
        return await models.on_completion(ctx, params)

    @server.feature(types.TEXT_DOCUMENT_CODE_ACTION, types.CodeActionOptions(
        code_action_kinds=[types.CodeActionKind.QuickFix, actions.FIX_ALL],
        resolve_provider=False))
    async def code_action(ls: BudgetLensServer, params: types.CodeActionParams
                          ) -> list[types.CodeAction | types.Command]:
        return await actions.on_code_action(ctx, params)


#: A command's handler: the server state and the command's arguments in, its result out.
CommandHandler = Callable[[ServerState, tuple[Any, ...]], Awaitable[dict[str, Any]]]


def _register_commands(server: BudgetLensServer, ctx: ServerState) -> None:
    handlers: dict[str, CommandHandler] = {
        commands.SHOW_HIERARCHY: commands.on_show_hierarchy,
        commands.SHOW_REPORT: commands.on_show_report,
        commands.CLAMP_ALL: commands.on_clamp_all,
        commands.APPLY_FIX: commands.on_apply_fix,
        commands.SHOW_LOCATION: commands.on_show_location,
    }
    for name, handler in handlers.items():
        server.command(name)(_command(ctx, handler))


def _command(ctx: ServerState, handler: CommandHandler,
             ) -> Callable[..., Awaitable[dict[str, Any]]]:
    """The function pygls runs for a command: its arguments, as the client sent them, go
    to ``handler``. (pygls reads the signature: ``ls`` first, then ``*args`` untouched.)"""
    async def run(ls: BudgetLensServer, *args: Any) -> dict[str, Any]:
        return await handler(ctx, args)
    return run


__all__ = ["BudgetLensServer", "create_server"]
