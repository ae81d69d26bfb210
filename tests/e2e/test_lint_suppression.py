"""The language server publishes with the CLI's suppression comments applied
(``budgetlens.contract.lint.apply_lint``): a ``# budgetlens: ignore[BL050]`` typed on the step's
line withdraws its diagnostic and the prompt file's, and a comment that hides nothing gets a
BL080 warning at the comment."""

from __future__ import annotations

import json
from pathlib import Path

from lsprotocol import types

from .harness import codes_of, find, running_server

STEP = "  - id: write_report"


async def test_a_typed_suppression_comment_withdraws_the_diagnostic(workspace: Path) -> None:
    text = (workspace / "pipelines/long_report.yaml").read_text("utf-8")
    assert text.count(STEP + "\n") == 1
    async with running_server(workspace) as ed:
        uri = ed.open("pipelines/long_report.yaml")
        prompt = ed.uri("prompts/report.txt")
        await ed.wait_diagnostics(uri, lambda ds: codes_of(ds) == ["BL050"])
        await ed.wait_diagnostics(prompt, lambda ds: codes_of(ds) == ["BL050"])
        ed.replace_all(uri, text.replace(STEP, STEP + "  # budgetlens: ignore[BL050]"))
        await ed.wait_diagnostics(uri, lambda ds: ds == [])
        await ed.wait_diagnostics(prompt, lambda ds: ds == [])
        unused = text.replace(STEP, STEP + "  # budgetlens: ignore[BL061]")
        ed.replace_all(uri, unused)
        diags = await ed.wait_diagnostics(uri, lambda ds: sorted(codes_of(ds))
                                          == ["BL050", "BL080"])
    [warning] = [d for d in diags if d.code == "BL080"]
    line, col = find(unused, "# budgetlens")
    assert (warning.range.start.line, warning.range.start.character) == (line, col)
    assert warning.severity == types.DiagnosticSeverity.Warning
    assert warning.message == "unused suppression: no BL061 diagnostic on this line"


async def test_config_json_lint_block_applies_in_the_editor(workspace: Path) -> None:
    """config.json's ``lint`` block turns BL050 off for the pipeline, as ``check`` does; the
    same publish carries the BL080 of a comment the block made useless."""
    config = json.loads((workspace / "config.json").read_text("utf-8"))
    config["lint"] = {"per_file_ignores": {"pipelines/long_report.yaml": ["BL050"]}}
    (workspace / "config.json").write_text(json.dumps(config, indent=2), "utf-8")
    text = (workspace / "pipelines/long_report.yaml").read_text("utf-8")
    async with running_server(workspace) as ed:
        uri = ed.open("pipelines/long_report.yaml",
                      text.replace(STEP, STEP + "  # budgetlens: ignore[BL050]"))
        diags = await ed.wait_diagnostics(uri, lambda ds: "BL080" in codes_of(ds))
    assert codes_of(diags) == ["BL080"]


async def test_a_bad_lint_block_is_an_error_at_the_block(workspace: Path) -> None:
    """A ``lint`` block naming no code is not silently dropped: config.json (closed) gets a
    BL013 error over its ``"lint"`` key; fixed in the buffer, the error goes."""
    config = json.loads((workspace / "config.json").read_text("utf-8"))
    config["lint"] = {"select": ["BL999"]}
    text = json.dumps(config, indent=2)
    (workspace / "config.json").write_text(text, "utf-8")
    async with running_server(workspace) as ed:
        uri = ed.uri("config.json")
        [error] = await ed.wait_diagnostics(uri, lambda ds: codes_of(ds) == ["BL013"])
        assert error.severity == types.DiagnosticSeverity.Error
        line, col = find(text, '"lint"')
        assert (error.range.start.line, error.range.start.character) == (line, col)
        assert (error.range.end.line, error.range.end.character) == (line, col + len('"lint"'))
        assert "lint.select: unknown code 'BL999'" in error.message
        assert "not applied" in error.message
        ed.open("config.json", text, language_id="json")
        ed.replace_all(uri, text.replace('"BL999"', '"BL050"'))
        await ed.wait_diagnostics(uri, lambda ds: ds == [])


TINY = """\
settings:
  max_context_tokens: 1000
steps:
  - id: answer  # budgetlens: ignore[BL061]
    type: call_model
    prompt_key: answer
    user_parts:
      template: "Q: {question}"
    max_output_tokens: 100
"""


async def test_an_unused_comment_in_a_closed_pipeline_is_reported(workspace: Path) -> None:
    """BL080 needs no open buffer: the server publishes every indexed pipeline, also one
    with no other diagnostic (1000 + 100 + 128 + its prompts fit 8192 by far)."""
    (workspace / "pipelines/tiny.yaml").write_text(TINY, "utf-8")
    async with running_server(workspace) as ed:
        diags = await ed.wait_diagnostics(ed.uri("pipelines/tiny.yaml"),
                                          lambda ds: "BL080" in codes_of(ds))
    [warning] = diags
    assert (warning.range.start.line, warning.range.start.character) == find(
        TINY, "# budgetlens")
    assert warning.message == "unused suppression: no BL061 diagnostic on this line"
