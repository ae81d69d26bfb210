"""Silence means "checked and fine", never "could not check" (DESIGN.md §0, issue 10 item 4).

A real server over stdio (pytest-lsp):

- a check that raises (the documented test hook ``BUDGETLENS_TEST_FAULT=check``, see
  docs/language-server.md) shows a BL009 error on the pipeline and one
  ``window/showMessage``, not one per keystroke; no stale lens is left;
- the same for the analysis of a JSON buffer (``BUDGETLENS_TEST_FAULT=json``);
- a config.json whose window has 4,301 digits gets the normal BL012 at the value, and the
  pipelines their normal diagnostics, no BL009 and no message;
- a JSON buffer above the 4,000,000 characters analysed as you type gets a BL201 notice.

Expected messages and ranges are written out by hand.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from lsprotocol import types

from tests.waiting import until

from .harness import Editor, codes_of, running_server

FAULT = "BUDGETLENS_TEST_FAULT"
ERROR = types.DiagnosticSeverity.Error
INFO = types.DiagnosticSeverity.Information


def _range(line: int, start: int, end_line: int, end: int) -> types.Range:
    return types.Range(start=types.Position(line=line, character=start),
                       end=types.Position(line=end_line, character=end))


async def _settle(ed: Editor, seconds: float = 1.0) -> None:
    """Let the server finish what it was sent (a request after pending edits flushes them)."""
    await ed.client.text_document_code_lens_async(types.CodeLensParams(
        text_document=types.TextDocumentIdentifier(uri=ed.uri("pipelines/base.yaml"))))
    await asyncio.sleep(seconds)


def _error_messages(ed: Editor) -> list[str]:
    return [m.message for m in ed.client.messages if m.type == types.MessageType.Error]


async def test_a_check_that_raises_is_an_error_on_the_file_and_one_message(
        workspace: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(FAULT, "check")
    async with running_server(workspace) as ed:
        text = (workspace / "pipelines/long_report.yaml").read_text("utf-8")
        first_line = text.split("\n", 1)[0]
        uri = ed.open("pipelines/long_report.yaml")
        [d] = await ed.wait_diagnostics(uri)
        assert d.code == "BL009" and d.severity == ERROR
        assert d.message == ("budgetlens could not check this file: RuntimeError: fault"
                             " injected by BUDGETLENS_TEST_FAULT=check; details in the log")
        assert d.range == _range(0, 0, 0, len(first_line))
        # a pipeline that is not open shows it too (published for the file)
        base = ed.uri("pipelines/base.yaml")
        assert codes_of(await ed.wait_diagnostics(base)) == ["BL009"]
        # no lens pretends the file was checked
        lenses = await ed.client.text_document_code_lens_async(types.CodeLensParams(
            text_document=types.TextDocumentIdentifier(uri=uri)))
        assert not lenses
        # typing goes on: still the error, still exactly one message for this kind of failure
        for n in range(3):
            ed.replace_all(uri, text.replace("max_context_tokens: 6144",
                                             f"max_context_tokens: {6000 + n}"))
            await _settle(ed, 0.3)
        assert codes_of(await ed.wait_diagnostics(uri)) == ["BL009"]
        await until(lambda: bool(_error_messages(ed)), "the error message")
        await _settle(ed)  # any second message would arrive meanwhile
        assert _error_messages(ed) == [
            "budgetlens could not check base.yaml: RuntimeError: fault injected by"
            " BUDGETLENS_TEST_FAULT=check. Files it cannot check show a BL009 error instead"
            " of their diagnostics; details in the server log."]


async def test_a_json_analysis_that_raises_is_an_error_on_the_buffer(
        workspace: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(FAULT, "json")
    async with running_server(workspace) as ed:
        text = (workspace / "responses/truncated.json").read_text("utf-8")
        uri = ed.open("responses/truncated.json", language_id="json")
        [d] = await ed.wait_diagnostics(uri)
        assert d.code == "BL009" and d.severity == ERROR
        assert d.message == ("budgetlens could not analyse this file: RuntimeError: fault"
                             " injected by BUDGETLENS_TEST_FAULT=json; details in the log")
        assert d.range == _range(0, 0, 0, len(text.split("\n", 1)[0]))
        # the pipelines are checked as usual: the fault is in the JSON analysis only
        report = await ed.wait_diagnostics(ed.uri("pipelines/long_report.yaml"))
        assert codes_of(report) == ["BL050"]
        await until(lambda: bool(_error_messages(ed)), "the error message")
        await _settle(ed)  # any second message would arrive meanwhile
        assert _error_messages(ed) == [
            "budgetlens could not check truncated.json: RuntimeError: fault injected by"
            " BUDGETLENS_TEST_FAULT=json. Files it cannot check show a BL009 error instead"
            " of their diagnostics; details in the server log."]
        # closing the buffer clears what was shown for it
        ed.close(uri)
        await ed.wait_diagnostics(uri, lambda ds: ds == [])


async def test_a_window_of_4301_digits_is_a_normal_diagnostic_at_the_value(
        workspace: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(FAULT, raising=False)
    async with running_server(workspace) as ed:
        config = (workspace / "config.json").read_text("utf-8")
        assert '  "model_context_window": 8192,\n' in config
        long_report = ed.uri("pipelines/long_report.yaml")
        await ed.wait_diagnostics(long_report, lambda ds: codes_of(ds) == ["BL050"])
        huge = "9" * 4301
        uri = ed.open("config.json", config.replace("8192", huge), language_id="json")
        diags = await ed.wait_diagnostics(uri, lambda ds: "BL012" in codes_of(ds))
        [d] = diags
        assert d.severity == ERROR
        assert d.message == ("model_context_window must be an integer > 0, got a number of"
                             " 4,301 digits: too long to read")
        line = config.split("\n").index('  "model_context_window": 8192,')
        column = len('  "model_context_window": ')
        assert d.range == _range(line, column, line, column + 4301)
        # the pipelines are checked against it, nothing failed: the error is the config's
        # (BL050 of long_report.yaml gives way to it, no BL009 anywhere)
        await ed.wait_diagnostics(long_report, lambda ds: ds == [])  # awaited, not timed
        await _settle(ed)
        for name in ("base", "chat", "long_report", "multilingual", "support"):
            assert list(ed.client.diagnostics.get(ed.uri(f"pipelines/{name}.yaml"), [])) == [], name
        assert _error_messages(ed) == []
        # and fixing the value brings the normal result back
        ed.replace_all(uri, config)
        await ed.wait_diagnostics(uri, lambda ds: ds == [])
        report = await ed.wait_diagnostics(long_report, lambda ds: codes_of(ds) == ["BL050"])
        assert report[0].severity == ERROR


async def test_a_json_buffer_too_large_to_analyse_gets_a_notice(
        workspace: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(FAULT, raising=False)
    async with running_server(workspace) as ed:
        item = '{"id": 7, "text": "' + "x" * 80 + '"}, '
        big = '{"items": [' + item * (4_000_000 // len(item) + 1)
        assert len(big) > 4_000_000
        uri = ed.open("responses/big.json", big, language_id="json")
        [d] = await ed.wait_diagnostics(uri)
        assert d.code == "BL201" and d.severity == INFO
        assert d.range == _range(0, 0, 0, 0)
        assert d.message == (f"JSON buffer of {len(big):,} characters, above the 4,000,000"
                             " analysed as you type: a cut in it is not shown; to analyse it,"
                             " save it and run `budgetlens contexts big.json` in a terminal")
        # back under the limit: the cut is shown again, the notice is gone
        ed.replace_all(uri, '{"items": [' + item * 3)
        [cut] = await ed.wait_diagnostics(uri, lambda ds: codes_of(ds) == ["BL200"])
        assert cut.severity == INFO
