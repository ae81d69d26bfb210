"""Start-up, settings and shutdown: ``initialize`` (capabilities, encoding, roots,
``initializationOptions``), ``initialized`` (index the workspace with progress, register
file watchers, pull ``workspace/configuration``), ``didChangeConfiguration`` and
``shutdown``.

Settings come from ``initializationOptions``, then ``workspace/configuration``, and again on
every ``workspace/didChangeConfiguration``; a change re-checks everything.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Awaitable
from typing import Any

from lsprotocol import types

from budgetlens_lsp.convert import encoding_name
from budgetlens_lsp.features.state import ClientFeatures, ServerState
from budgetlens_lsp.settings import parse_settings
from budgetlens_lsp.workspace_index import IndexMode, norm

log = logging.getLogger(__name__)

SECTION = "budgetlens"
#: Workspaces with more pipelines than this get a $/progress report while indexing.
LARGE_WORKSPACE = 20
WATCH_GLOBS = ("**/*.yaml", "**/*.yml", "**/*.txt", "**/*.json", "**/*.prompty",
               "**/*.prompt", "**/.gitignore", "**/.git/info/exclude")
#: Seconds the server waits for the client's answer to one of its requests.
CLIENT_TIMEOUT = 5


# --- settings ------------------------------------------------------------------------------

def apply_settings(ctx: ServerState, raw: Any, *, source: str) -> None:
    settings, problems = parse_settings(raw)
    if problems:
        ctx.message(f"budgetlens: invalid settings ({source}): " + "; ".join(problems))
    if settings != ctx.session.settings:
        ctx.session.settings = settings
        ctx.session.mark_dirty([], IndexMode.FULL)


async def pull_configuration(ctx: ServerState) -> None:
    try:
        result = await asyncio.wait_for(ctx.server.workspace_configuration_async(
            types.ConfigurationParams(items=[types.ConfigurationItem(section=SECTION)])),
            CLIENT_TIMEOUT)
    except Exception as exc:
        log.warning("workspace/configuration failed: %s", exc)
        return
    value = result[0] if result else None
    if value is not None:
        apply_settings(ctx, value, source="workspace/configuration")


async def did_change_configuration(ctx: ServerState,
                                   params: types.DidChangeConfigurationParams) -> None:
    try:
        raw = params.settings
        if isinstance(raw, dict) and SECTION in raw:
            apply_settings(ctx, raw[SECTION], source="didChangeConfiguration")
        elif ctx.client.configuration:
            await pull_configuration(ctx)
        elif raw is None:
            apply_settings(ctx, ctx.init_settings, source="initializationOptions")
    except Exception:
        log.exception("applying the configuration change failed")


# --- start-up ------------------------------------------------------------------------------

def initialize(ctx: ServerState, params: types.InitializeParams) -> None:
    session = ctx.session
    ctx.client = ClientFeatures(params.capabilities, params.initialization_options)
    session.encoding = encoding_name(ctx.server.workspace.position_encoding)
    ctx.init_settings = params.initialization_options
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


async def initialized(ctx: ServerState, params: types.InitializedParams) -> None:
    if ctx.init_settings is not None:
        _, problems = parse_settings(ctx.init_settings)
        if problems:
            ctx.message("budgetlens: invalid initializationOptions: " + "; ".join(problems))
    # indexing waits for the client's settings, when it has any to give: a whole check
    # with other settings would be thrown away. Their answer also comes after the documents
    # the client opened right after ``initialized``, so those are checked first.
    settled = asyncio.ensure_future(pull_configuration(ctx)) \
        if ctx.client.configuration else None
    jobs: list[Awaitable[None]] = [index_workspace(ctx, settled), register_watchers(ctx)]
    if settled is not None:
        jobs.append(settled)
    for outcome in await asyncio.gather(*jobs, return_exceptions=True):
        if isinstance(outcome, BaseException):
            log.error("initialization step failed: %r", outcome)


async def register_watchers(ctx: ServerState) -> None:
    registrations = []
    if ctx.client.watch_registration:
        registrations.append(types.Registration(
            id=str(uuid.uuid4()), method=types.WORKSPACE_DID_CHANGE_WATCHED_FILES,
            register_options=types.DidChangeWatchedFilesRegistrationOptions(
                watchers=[types.FileSystemWatcher(glob_pattern=g) for g in WATCH_GLOBS])))
    if ctx.client.config_registration:
        registrations.append(types.Registration(
            id=str(uuid.uuid4()), method=types.WORKSPACE_DID_CHANGE_CONFIGURATION,
            register_options={"section": SECTION}))
    if registrations:
        try:
            await asyncio.wait_for(ctx.server.client_register_capability_async(
                types.RegistrationParams(registrations=registrations)), CLIENT_TIMEOUT)
        except Exception as exc:
            log.warning("client/registerCapability failed: %s", exc)


class IndexProgress:
    """The ``$/progress`` of the first indexing. It begins with the index's first report
    of a round of more than :data:`LARGE_WORKSPACE` pipelines: the index counts them when it
    plans the round, so no walk of the workspace runs before the first diagnostics."""

    def __init__(self, ctx: ServerState) -> None:
        self._ctx = ctx
        self._loop = asyncio.get_running_loop()
        self._begun: asyncio.Task[str | None] | None = None
        self._latest: tuple[int, int] = (0, 0)

    def report(self, done: int, total: int) -> None:
        """A ``ProgressHook``: called on the analysis thread, handed to the loop."""
        self._loop.call_soon_threadsafe(self._on_report, done, total)

    def _on_report(self, done: int, total: int) -> None:
        self._latest = (done, total)
        if self._begun is None:
            if total > LARGE_WORKSPACE:
                self._begun = asyncio.ensure_future(self._begin(total))
        elif self._begun.done() and (token := self._begun.result()) is not None:
            self._send(token)

    async def _begin(self, total: int) -> str | None:
        token = f"budgetlens-index-{uuid.uuid4()}"
        progress = self._ctx.server.work_done_progress
        try:
            await asyncio.wait_for(progress.create_async(token), CLIENT_TIMEOUT)
            progress.begin(token, types.WorkDoneProgressBegin(
                title="budgetlens: checking pipelines", percentage=0,
                message=f"0/{total}", cancellable=False))
        except Exception as exc:
            log.warning("progress not available: %s", exc)
            return None
        if self._latest[0]:  # reports that came while the client created the token
            self._send(token)
        return token

    def _send(self, token: str) -> None:
        done, total = self._latest
        self._ctx.server.work_done_progress.report(token, types.WorkDoneProgressReport(
            message=f"{done}/{total}", percentage=int(100 * done / max(total, 1))))

    async def end(self) -> None:
        if self._begun is not None and (token := await self._begun) is not None:
            self._ctx.server.work_done_progress.end(
                token, types.WorkDoneProgressEnd(message="done"))


async def index_workspace(ctx: ServerState, settled: asyncio.Future[None] | None = None
                          ) -> None:
    """Check the whole workspace, once ``settled`` (the pull of the client's settings) is
    done."""
    session = ctx.session
    if settled is not None:
        await asyncio.wait([settled])
    # documents opened meanwhile are analysed and published first: a whole re-check marked
    # now would overtake (hold) their analysis and delay the first diagnostics until the
    # whole workspace is checked
    await session.flush()
    progress = IndexProgress(ctx) if ctx.client.progress and session.roots else None
    if progress is not None:
        session.progress_hook = lambda: progress.report
    # before any analysis, asking for the search is enough: the first update checks
    # everything anyway (the settings are new to the index), and may check the documents
    # opened with it first (``WorkspaceIndex._open_first``)
    session.mark_dirty([], IndexMode.FULL if session.analyses else IndexMode.REDISCOVER)
    try:
        await session.flush()
    finally:
        session.progress_hook = None
        if progress is not None:
            await progress.end()


def shutdown(ctx: ServerState, params: Any) -> None:
    ctx.session.shutdown()
