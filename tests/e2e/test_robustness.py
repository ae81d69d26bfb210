"""The server never dies and never stops answering (issue 4, point 3).

One real server process (``python -m budgetlens_lsp serve``, pytest-lsp over stdio) gets
malformed YAML and JSON, binary content (in a buffer and on disk), a 20 MB buffer, invalid
command arguments, requests for unknown documents and a burst of 2,000 didChange
notifications. Then a normal request must be answered correctly, the diagnostics must
describe the last state of the burst, and the process must still be running.

The expected budget is computed here by hand from the contract (DESIGN.md §1) with the
tokenizer as the independent reference: fixed = prompt + emptied template + format overhead.
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types
from pygls.exceptions import JsonRpcException
from pytest_lsp import LanguageClient, make_test_lsp_client

from budgetlens.tokens.core import get_tokenizer
from tests.waiting import ANSWER_GUARD

from .harness import wait_published

WINDOW = 1000
OUTPUT = 200
MARGIN = 50
OVERHEAD = 10
SYSTEM_PROMPT = "You are a careful assistant. Answer briefly and cite the context.\n"
TEMPLATE = "Q: {question}"
TEMPLATE_EMPTIED = "Q: "
FINAL_CONTEXT = 900
BURST = 2000
ANSWER_TIMEOUT = ANSWER_GUARD  # a hang guard only (tests/waiting.py)

PIPELINE = """\
settings:
  max_context_tokens: {context}
  budget_safety_margin_tokens: {margin}
steps:
  - id: answer
    type: call_model
    prompt_key: system
    user_parts:
      template: "{template}"
    max_output_tokens: {output}
"""


def pipeline_text(context: int) -> str:
    return PIPELINE.format(context=context, margin=MARGIN, template=TEMPLATE, output=OUTPUT)


def expected_total(context: int) -> int:
    counter = get_tokenizer("cl100k_base")
    fixed = counter.count(SYSTEM_PROMPT) + counter.count(TEMPLATE_EMPTIED) + OVERHEAD
    return fixed + context + OUTPUT + MARGIN


def make_workspace(root: Path) -> Path:
    (root / "prompts").mkdir(parents=True)
    (root / "pipelines").mkdir()
    (root / "responses").mkdir()
    (root / "config.json").write_text(json.dumps({
        "model_context_window": WINDOW, "model_max_tokens": OUTPUT, "prompts_dir": "prompts",
        "development": True, "format_overhead_tokens": OVERHEAD, "tokenizer": "cl100k_base"}))
    (root / "prompts" / "system.txt").write_text(SYSTEM_PROMPT, encoding="utf-8")
    # a prompt file on disk that is not text at all
    (root / "prompts" / "binary.txt").write_bytes(bytes(range(256)) * 64)
    (root / "pipelines" / "main.yaml").write_text(pipeline_text(500), encoding="utf-8")
    (root / "pipelines" / "uses_binary.yaml").write_text(
        pipeline_text(500).replace("prompt_key: system", "prompt_key: binary"),
        encoding="utf-8")
    return root


class Session:
    def __init__(self, client: LanguageClient, root: Path) -> None:
        self.client = client
        self.root = root
        self.versions: dict[str, int] = {}

    def uri(self, rel: str) -> str:
        return (self.root / rel).resolve().as_uri()

    def open(self, rel: str, text: str, language: str) -> str:
        uri = self.uri(rel)
        self.versions[uri] = 1
        self.client.text_document_did_open(types.DidOpenTextDocumentParams(
            text_document=types.TextDocumentItem(uri=uri, language_id=language, version=1,
                                                 text=text)))
        return uri

    def change(self, uri: str, changes: list[Any]) -> int:
        self.versions[uri] = self.versions.get(uri, 0) + 1
        self.client.text_document_did_change(types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(
                uri=uri, version=self.versions[uri]),
            content_changes=changes))
        return self.versions[uri]

    async def answered(self, coroutine: Any) -> Any:
        """The result, or the LSP error object: both count as answered; a hang does not."""
        try:
            return await asyncio.wait_for(coroutine, ANSWER_TIMEOUT)
        except JsonRpcException as error:
            return error

    def alive(self) -> bool:
        server = self.client._server
        return server is not None and server.returncode is None

    async def diagnostics(self, uri: str, predicate: Any, timeout: float = ANSWER_TIMEOUT,
                          ) -> list[types.Diagnostic]:
        return await wait_published(self.client, uri, predicate, timeout)


@pytest.fixture
async def session(tmp_path: Path):
    root = make_workspace(tmp_path / "workspace")
    client = make_test_lsp_client()
    client.set_configuration({"budgetlens": {}})
    await client.start_io(sys.executable, "-m", "budgetlens_lsp", "serve")
    try:
        await asyncio.wait_for(client.initialize_session(types.InitializeParams(
            capabilities=types.ClientCapabilities(
                workspace=types.WorkspaceClientCapabilities(
                    configuration=True, apply_edit=True, workspace_folders=True),
                text_document=types.TextDocumentClientCapabilities(
                    code_lens=types.CodeLensClientCapabilities(),
                    publish_diagnostics=types.PublishDiagnosticsClientCapabilities(
                        related_information=True, version_support=True))),
            root_uri=root.resolve().as_uri(),
            workspace_folders=[types.WorkspaceFolder(uri=root.resolve().as_uri(),
                                                     name="workspace")])), ANSWER_TIMEOUT)
        yield Session(client, root)
    finally:
        server = client._server
        try:
            if server is not None and server.returncode is None:
                await asyncio.wait_for(client.shutdown_session(), ANSWER_GUARD)
        finally:
            if server is not None and server.returncode is None:
                server.kill()  # by its PID, only when shutdown did not end it
                await server.wait()


def lens_titles(lenses: list[types.CodeLens] | None) -> list[str]:
    return [lens.command.title.replace(",", "") for lens in lenses or [] if lens.command]


@pytest.mark.e2e
async def test_server_survives_hostile_input_and_still_answers_correctly(
        session: Session) -> None:
    s = session
    client = s.client

    # malformed YAML and JSON: diagnosed (YAML) or tolerated (JSON), never fatal
    bad_yaml = s.open("pipelines/broken.yaml",
                      "settings: [unclosed\n  max_context_tokens: : :\n\t- {\n", "yaml")
    s.open("responses/broken.json", '{"a": ]]] , "b": tru\x7f', "json")
    broken = await s.diagnostics(bad_yaml, bool)
    assert any(d.severity == types.DiagnosticSeverity.Error for d in broken), broken

    # binary content in buffers, and a binary prompt file on disk used by a pipeline
    binary = bytes(range(256)).decode("latin-1") * 40
    s.open("pipelines/binary.yaml", binary, "yaml")
    s.open("responses/binary.json", binary, "json")
    s.open("prompts/binary_buffer.txt", binary, "plaintext")
    uses_binary = s.open("pipelines/uses_binary.yaml",
                         (s.root / "pipelines/uses_binary.yaml").read_text(), "yaml")
    on_binary = await s.diagnostics(uses_binary, bool)
    assert any("binary.txt" in d.message or "UTF-8" in d.message or "binary" in d.message
               for d in on_binary), on_binary

    # a 20 MB buffer, as a pipeline and as a truncated JSON response
    item = '{"id": 1234567, "text": "' + "lorem ipsum dolor sit amet " * 6 + '"}, '
    huge_json = '{"items": [' + item * (20_000_000 // len(item))
    assert len(huge_json) > 19_900_000
    huge_json_uri = s.open("responses/huge.json", huge_json, "json")
    huge_yaml = "settings:\n  max_context_tokens: 10\nsteps:\n" + (
        "  - id: s\n    type: retrieve\n    note: " + "x" * 70 + "\n") * (20_000_000 // 100)
    huge_yaml_uri = s.open("pipelines/huge.yaml", huge_yaml, "yaml")

    # every hostile buffer is answered with diagnostics (an empty list counts), the readable
    # ones say what is wrong
    binary_uri, huge = s.uri("pipelines/binary.yaml"), huge_yaml_uri
    for rel in ("responses/broken.json", "responses/binary.json",
                "prompts/binary_buffer.txt", "responses/huge.json"):
        await s.diagnostics(s.uri(rel), lambda ds: True)
    assert any(d.severity == types.DiagnosticSeverity.Error and "binary" in d.message
               for d in await s.diagnostics(binary_uri, bool))
    assert any(d.severity == types.DiagnosticSeverity.Error and str(d.code).startswith("BL")
               for d in await s.diagnostics(huge, bool))

    # invalid command arguments: each one is answered (result or LSP error)
    command_cases: list[tuple[str, list[Any] | None]] = [
        ("budgetlens.showHierarchyContext", None),
        ("budgetlens.showHierarchyContext", []),
        ("budgetlens.showHierarchyContext", [42]),
        ("budgetlens.showHierarchyContext", [{"uri": 5}]),
        ("budgetlens.showHierarchyContext", [{"uri": "file:///nowhere/x.json"}]),
        ("budgetlens.showHierarchyContext", [{"uri": s.uri("responses/broken.json"),
                                              "budget": "lots"}]),
        ("budgetlens.showHierarchyContext", [{"uri": s.uri("responses/broken.json"),
                                              "budget": -5}]),
        ("budgetlens.clampAll", [{"uri": "not a uri"}]),
        ("budgetlens.clampAll", ["x", "y", {"z": None}]),
        ("budgetlens.showBudgetReport", [{"uri": s.uri("responses/binary.json")}]),
        ("budgetlens.showBudgetReport", [None]),
        ("budgetlens.showHierarchyContext", [{"uri": huge_json_uri}]),
        ("budgetlens.showBudgetReport", [{"uri": huge_yaml_uri}]),
        ("budgetlens.noSuchCommand", []),
    ]
    for command, arguments in command_cases:
        await s.answered(client.workspace_execute_command_async(
            types.ExecuteCommandParams(command=command, arguments=arguments)))
        assert s.alive(), f"server died on {command} {arguments}"

    # requests for documents the server never saw
    for uri in ("file:///nowhere/missing.yaml", "untitled:Untitled-1",
                s.uri("pipelines/never_opened.yaml")):
        doc = types.TextDocumentIdentifier(uri=uri)
        position = types.Position(line=3, character=4)
        await s.answered(client.text_document_hover_async(
            types.HoverParams(text_document=doc, position=position)))
        await s.answered(client.text_document_code_lens_async(
            types.CodeLensParams(text_document=doc)))
        await s.answered(client.text_document_code_action_async(types.CodeActionParams(
            text_document=doc, range=types.Range(start=position, end=position),
            context=types.CodeActionContext(diagnostics=[]))))
        s.change(uri, [types.TextDocumentContentChangeWholeDocument(text="steps: []\n")])
        client.text_document_did_close(types.DidCloseTextDocumentParams(text_document=doc))
        assert s.alive(), f"server died on requests for {uri}"

    # a burst of 2,000 didChange notifications, each a new max_context_tokens value
    main = s.open("pipelines/main.yaml", pipeline_text(500), "yaml")
    text = pipeline_text(500)
    line = 1
    for i in range(BURST):
        value = FINAL_CONTEXT if i == BURST - 1 else 100 + (i * 37) % 900
        start = text.index("max_context_tokens: ") + len("max_context_tokens: ")
        end = text.index("\n", start)
        column = start - text.rfind("\n", 0, start) - 1
        s.change(main, [types.TextDocumentContentChangePartial(
            range=types.Range(start=types.Position(line=line, character=column),
                              end=types.Position(line=line, character=column + end - start)),
            text=str(value))])
        text = text[:start] + str(value) + text[end:]
    assert text == pipeline_text(FINAL_CONTEXT)

    # a normal request is answered correctly: the lens of the step shows the last state
    total = expected_total(FINAL_CONTEXT)
    assert total > WINDOW  # the final state is over budget (by hand: the numbers above)
    expected = f"= {total} / {WINDOW} ({total - WINDOW} over)"
    loop = asyncio.get_running_loop()
    deadline = loop.time() + ANSWER_TIMEOUT
    titles: list[str] = []
    while loop.time() < deadline:
        lenses = await s.answered(client.text_document_code_lens_async(
            types.CodeLensParams(text_document=types.TextDocumentIdentifier(uri=main))))
        assert not isinstance(lenses, JsonRpcException), lenses
        titles = lens_titles(lenses)
        if any(expected in t for t in titles):
            break
        await asyncio.sleep(0.1)
    assert any(expected in t and f"context {FINAL_CONTEXT}" in t for t in titles), (
        expected, titles)

    # and the published diagnostics describe the final text: over budget by the same amount
    final = await s.diagnostics(
        main, lambda ds: any(str(total - WINDOW) in d.message for d in ds))
    over = [d for d in final if str(total - WINDOW) in d.message]
    assert over[0].severity == types.DiagnosticSeverity.Error
    assert str(over[0].code).startswith("BL")

    assert s.alive()
