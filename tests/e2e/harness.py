"""Starting the real server (``python -m budgetlens_lsp serve``) under a pytest-lsp client.

Every test speaks LSP over stdio to its own server process. Helpers here wait for
diagnostics, apply ``WorkspaceEdit``s to texts, and copy the ``examples/`` workspace.

The behavioural suites run once per client recorded in ``clients/`` (what VS Code and Neovim
really declare in ``initialize``, made with scripts/record_client_capabilities.py): the
``recorded`` fixture of conftest.py passes each :class:`RecordedClient` to
:func:`running_server`. Tests of one capability switch on purpose build their capabilities
with :func:`caps` instead.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import shutil
import sys
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Union

from lsprotocol import types
from lsprotocol.converters import get_converter
from pytest_lsp import LanguageClient, make_test_lsp_client

from budgetlens.source import LineIndex, Position, Range, TextEdit, apply_text_edits
from tests.waiting import ANSWER_GUARD

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "examples"
SERVER_COMMAND = (sys.executable, "-m", "budgetlens_lsp", "serve")
TIMEOUT = ANSWER_GUARD  # a hang guard only (tests/waiting.py)
CLIENTS = Path(__file__).resolve().parent / "clients"


def copy_examples(dest: Path) -> Path:
    """A private copy of the examples workspace (tests edit files in it)."""
    root = dest / "workspace"
    shutil.copytree(EXAMPLES, root)
    return root


def caps(*, encodings: Sequence[str] | None = None, pull: bool = False,
         apply_edit: bool = True, document_changes: bool = True,
         configuration: bool = True, watched_files: bool = True,
         show_document: bool = True, work_done_progress: bool = True,
         refresh: bool = True) -> types.ClientCapabilities:
    """Client capabilities with just the switches the tests vary."""
    general = types.GeneralClientCapabilities(position_encodings=list(encodings)
                                              if encodings else None)
    text_document = types.TextDocumentClientCapabilities(
        synchronization=types.TextDocumentSyncClientCapabilities(did_save=True),
        publish_diagnostics=types.PublishDiagnosticsClientCapabilities(
            related_information=True),
        code_action=types.CodeActionClientCapabilities(
            code_action_literal_support=types.ClientCodeActionLiteralOptions(
                code_action_kind=types.ClientCodeActionKindOptions(
                    value_set=[types.CodeActionKind.QuickFix,
                               types.CodeActionKind.SourceFixAll])),
            data_support=True),
        hover=types.HoverClientCapabilities(
            content_format=[types.MarkupKind.Markdown, types.MarkupKind.PlainText]),
        code_lens=types.CodeLensClientCapabilities(),
        diagnostic=types.DiagnosticClientCapabilities(related_document_support=False)
        if pull else None,
    )
    workspace = types.WorkspaceClientCapabilities(
        apply_edit=apply_edit,
        workspace_edit=types.WorkspaceEditClientCapabilities(document_changes=document_changes),
        configuration=configuration,
        did_change_configuration=types.DidChangeConfigurationClientCapabilities(
            dynamic_registration=True),
        did_change_watched_files=types.DidChangeWatchedFilesClientCapabilities(
            dynamic_registration=watched_files),
        diagnostics=types.DiagnosticWorkspaceClientCapabilities(refresh_support=True)
        if pull and refresh else None,
        code_lens=types.CodeLensWorkspaceClientCapabilities(refresh_support=True),
        workspace_folders=True,
    )
    window = types.WindowClientCapabilities(
        work_done_progress=work_done_progress,
        show_document=types.ShowDocumentClientCapabilities(support=True)
        if show_document else None)
    return types.ClientCapabilities(general=general, text_document=text_document,
                                    workspace=workspace, window=window)


@dataclass(frozen=True)
class RecordedClient:
    """What a real editor sent in ``initialize``: its name, capabilities and options."""

    name: str  # the file's stem: "vscode-1.100.3", "neovim-0.7.2", ...
    info: types.ClientInfo | None
    capabilities: types.ClientCapabilities
    initialization_options: Any

    def __str__(self) -> str:
        return self.name

    @property
    def pulls_diagnostics(self) -> bool:
        """The client declares ``textDocument/diagnostic``: the server pulls open documents."""
        td = self.capabilities.text_document
        return bool(td and td.diagnostic is not None)


def load_recorded_client(path: Path) -> RecordedClient:
    params = get_converter().structure(json.loads(path.read_text("utf-8")),
                                       types.InitializeParams)
    return RecordedClient(path.stem, params.client_info, params.capabilities,
                          params.initialization_options)


RECORDED_CLIENTS = tuple(load_recorded_client(p) for p in sorted(CLIENTS.glob("*.json")))


async def wait_published(client: LanguageClient, uri: str,
                         predicate: Callable[[list[types.Diagnostic]], bool] = bool,
                         timeout: float = TIMEOUT) -> list[types.Diagnostic]:
    """Wait until the diagnostics PUSHED for ``uri`` satisfy ``predicate``."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while True:
        current = list(client.diagnostics.get(uri, []))
        if uri in client.diagnostics and predicate(current):
            return current
        remaining = deadline - loop.time()
        if remaining <= 0:
            raise AssertionError(f"diagnostics for {uri} never matched; last: {current}")
        # Never cancel pytest-lsp's future: it stays registered until the next push, and
        # setting a result on a cancelled one stops the client (asyncio.wait only returns).
        pushed = client.protocol.wait_for_notification(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
        await asyncio.wait([asyncio.wrap_future(pushed)], timeout=min(remaining, 1.0))


class Editor:
    """A thin editor model over the pytest-lsp client: buffers, versions, edits."""

    def __init__(self, client: LanguageClient, root: Path, encoding: str,
                 pulls: bool = False) -> None:
        self.client = client
        # a recorded client that pulls diagnostics: wait_diagnostics pulls open documents
        # as that editor does (tests of pull itself use caps(pull=True) and see raw pushes)
        self.pulls = pulls
        self.root = root
        self.encoding = encoding
        self.texts: dict[str, str] = {}
        self.versions: dict[str, int] = {}
        self.applied_edits: list[types.ApplyWorkspaceEditParams] = []
        self.apply_edit_result = True
        self.server_info: types.ServerInfo | None = None
        self.server_capabilities: types.ServerCapabilities | None = None

    # files and URIs
    def path(self, rel: str) -> Path:
        return self.root / rel

    def uri(self, rel: str) -> str:
        return self.path(rel).resolve().as_uri()

    # buffers
    def open(self, rel: str, text: str | None = None, language_id: str = "yaml") -> str:
        uri = self.uri(rel)
        if text is None:
            text = self.path(rel).read_text("utf-8")
        self.texts[uri] = text
        self.versions[uri] = 1
        self.client.text_document_did_open(types.DidOpenTextDocumentParams(
            text_document=types.TextDocumentItem(uri=uri, language_id=language_id,
                                                 version=1, text=text)))
        return uri

    def replace_all(self, uri: str, text: str) -> None:
        self.versions[uri] += 1
        self.texts[uri] = text
        self.client.text_document_did_change(types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=uri,
                                                                version=self.versions[uri]),
            content_changes=[types.TextDocumentContentChangeWholeDocument(text=text)]))

    def close(self, uri: str) -> None:
        self.texts.pop(uri, None)
        self.client.text_document_did_close(types.DidCloseTextDocumentParams(
            text_document=types.TextDocumentIdentifier(uri=uri)))

    def text(self, uri: str) -> str:
        if uri in self.texts:
            return self.texts[uri]
        return Path(uri_to_path(uri)).read_text("utf-8")

    # diagnostics
    async def wait_diagnostics(self, uri: str, predicate: Callable[[list[types.Diagnostic]],
                                                                    bool] = bool,
                               timeout: float = TIMEOUT) -> list[types.Diagnostic]:
        """Wait until the diagnostics of ``uri`` satisfy ``predicate``: pushed, or for an open
        document of a pulling client, pulled (again after every answer that does not match)."""
        if not (self.pulls and uri in self.texts):
            return await wait_published(self.client, uri, predicate, timeout)
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while True:
            report = await asyncio.wait_for(self.client.text_document_diagnostic_async(
                types.DocumentDiagnosticParams(text_document=td(uri))), timeout)
            assert isinstance(report, types.RelatedFullDocumentDiagnosticReport), report
            current = list(report.items)
            if predicate(current):
                return current
            remaining = deadline - loop.time()
            if remaining <= 0:
                raise AssertionError(f"pulled diagnostics for {uri} never matched; "
                                     f"last: {current}")
            await asyncio.sleep(min(remaining, 0.1))

    # edits
    def apply(self, edit: types.WorkspaceEdit) -> dict[str, str]:
        """Apply a WorkspaceEdit to buffers (open) or files (closed); returns new texts."""
        changed: dict[str, str] = {}
        per_uri: list[tuple[str, int | None, list[Any]]] = []
        if edit.document_changes:
            for change in edit.document_changes:
                assert isinstance(change, types.TextDocumentEdit), change
                per_uri.append((change.text_document.uri, change.text_document.version,
                                list(change.edits)))
        for uri, edits in (edit.changes or {}).items():
            per_uri.append((uri, None, list(edits)))
        for uri, version, edits in per_uri:
            if version is not None:
                assert self.versions.get(uri) == version, (uri, version, self.versions)
            text = self.text(uri)
            core_edits = [TextEdit("", to_core_range(text, e.range, self.encoding), e.new_text)
                          for e in edits]
            new = apply_text_edits(text, core_edits)
            changed[uri] = new
            if uri in self.texts:
                self.replace_all(uri, new)
            else:
                Path(uri_to_path(uri)).write_text(new, "utf-8")
        return changed


def uri_to_path(uri: str) -> str:
    from urllib.parse import unquote, urlparse
    return unquote(urlparse(uri).path)


def _from_units(line: str, units: int, encoding: str) -> int:
    if encoding == "utf-32":
        return min(units, len(line))
    seen = 0
    for i, ch in enumerate(line):
        if seen >= units:
            return i
        if encoding == "utf-16":
            seen += 2 if ord(ch) > 0xFFFF else 1
        else:
            seen += len(ch.encode("utf-8"))
    return len(line)


def to_core_range(text: str, rng: types.Range, encoding: str) -> Range:
    index = LineIndex(text)

    def pos(p: types.Position) -> Position:
        return Position(p.line, _from_units(index.line_text(p.line), p.character, encoding))
    return Range(pos(rng.start), pos(rng.end))


def units(s: str, encoding: str) -> int:
    """Length of ``s`` in code units of ``encoding`` (independent of the server's code)."""
    if encoding == "utf-32":
        return len(s)
    if encoding == "utf-16":
        return len(s.encode("utf-16-le")) // 2
    return len(s.encode("utf-8"))


@contextlib.asynccontextmanager
async def running_server(root: Path, *, recorded: RecordedClient | None = None,
                         capabilities: types.ClientCapabilities | None = None,
                         init_options: Any = None,
                         configuration: dict[str, Any] | None = None,
                         ) -> AsyncIterator[Editor]:
    """Start the server on ``root`` and yield an :class:`Editor` speaking to it.

    With ``recorded`` the ``initialize`` request is the one that editor sent (its capabilities,
    ``clientInfo`` and ``initializationOptions``, unless ``init_options`` is given too)."""
    if recorded is not None:
        assert capabilities is None, "a recorded client brings its own capabilities"
        capabilities = recorded.capabilities
        if init_options is None:
            init_options = recorded.initialization_options
    client = make_test_lsp_client()
    converter = client.protocol._converter

    def command_or_action(obj: Any, _: type) -> types.Command | types.CodeAction:
        # lsprotocol's own hook takes every object with a "command" key for a Command, so a
        # CodeAction that runs a command (LSP 3.16+) would be mis-read by the test client.
        if isinstance(obj.get("command"), str):
            return converter.structure(obj, types.Command)
        return converter.structure(obj, types.CodeAction)

    converter.register_structure_hook(Union[types.Command, types.CodeAction],  # noqa: UP007
                                      command_or_action)
    if configuration is not None:
        client.set_configuration(configuration)
    editor_box: list[Editor] = []

    @client.feature(types.WORKSPACE_APPLY_EDIT)
    def apply_edit(params: types.ApplyWorkspaceEditParams) -> types.ApplyWorkspaceEditResult:
        ed = editor_box[0]
        ed.applied_edits.append(params)
        if not ed.apply_edit_result:
            return types.ApplyWorkspaceEditResult(applied=False, failure_reason="refused")
        ed.apply(params.edit)
        return types.ApplyWorkspaceEditResult(applied=True)

    @client.feature(types.CLIENT_REGISTER_CAPABILITY)
    def register(params: types.RegistrationParams) -> None:
        client.registrations = [*getattr(client, "registrations", []), *params.registrations]

    @client.feature(types.WORKSPACE_CODE_LENS_REFRESH)
    def lens_refresh(params: None) -> None:
        client.lens_refreshes = getattr(client, "lens_refreshes", 0) + 1

    await client.start_io(*SERVER_COMMAND)
    try:
        result = await asyncio.wait_for(client.initialize_session(types.InitializeParams(
            capabilities=capabilities or caps(),
            client_info=recorded.info if recorded else None,
            root_uri=root.resolve().as_uri(),
            workspace_folders=[types.WorkspaceFolder(uri=root.resolve().as_uri(),
                                                     name=root.name)],
            initialization_options=init_options)), TIMEOUT)
        encoding = str(result.capabilities.position_encoding or "utf-16")
        editor = Editor(client, root, encoding,
                        pulls=recorded is not None and recorded.pulls_diagnostics)
        editor.server_info = result.server_info
        editor.server_capabilities = result.capabilities
        editor_box.append(editor)
        yield editor
        await asyncio.wait_for(client.shutdown_session(), TIMEOUT)
    finally:
        await stop_client(client)


async def stop_client(client: LanguageClient) -> None:
    """Stop a pytest-lsp client; a server still running (the test failed before a clean
    shutdown) is ended by its process, never by name."""
    proc = client._server
    if proc is not None and proc.returncode is None:
        proc.terminate()
        try:
            await asyncio.wait_for(proc.wait(), 5)
        except asyncio.TimeoutError:
            proc.kill()
    await client.stop()


def find(text: str, needle: str, nth: int = 0) -> tuple[int, int]:
    """(line, code-point column) of the ``nth`` occurrence of ``needle`` in ``text``."""
    offset = -1
    for _ in range(nth + 1):
        offset = text.index(needle, offset + 1)
    line = text.count("\n", 0, offset)
    return line, offset - (text.rfind("\n", 0, offset) + 1)


def td(uri: str) -> types.TextDocumentIdentifier:
    return types.TextDocumentIdentifier(uri=uri)


def codes_of(diags: list[types.Diagnostic]) -> list[str]:
    return [str(d.code) for d in diags]
