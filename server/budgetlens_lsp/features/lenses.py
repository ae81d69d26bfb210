"""Code lenses: the budget of every ``call_model`` step as a sum, the tightest step above
``settings``, and a prompt file's token count and users.

- above a step: ``fixed 193 + history 600 + context 2000 + output 1500 + margin 100 =
  4393 / 4096 (297 over)`` or ``... (1,204 free)``; click: the pipeline's budget report;
- above ``settings``: ``tightest step: long_report.yaml › write_report (229 over)``, over
  every pipeline that reads these settings; click: open that step;
- above ``extends``: how the inherited steps fare; click: open the tightest;
- with a ``settings.injection`` policy: the step's injection split above each step
  (``injection 1,640: cards 656 · buckets 984``) and the tightest one above ``injection``;
- at the top of a prompt file: ``186 tokens (cl100k_base) · used by 2 steps in 2
  pipelines``; click: open the tightest step that uses it.
"""

from __future__ import annotations

import os
from typing import Any

from lsprotocol import types

from budgetlens import codes
from budgetlens.contract.discovery import PROMPT_SUFFIXES
from budgetlens.contract.results import PipelineReport, StepBudget
from budgetlens.source import Location, Range
from budgetlens.tokens.core import DEFAULT_TOKENIZER, TokenizerError, get_tokenizer
from budgetlens.tokens.families import approx_mark
from budgetlens.yamldoc.parse import YamlDocument, parse_yaml
from budgetlens_lsp.convert import Converter, format_int, uri_from_path
from budgetlens_lsp.features.shared import (
    SHOW_LOCATION,
    SHOW_REPORT,
    budget_sum,
    headroom_text,
    readable,
    step_label,
)
from budgetlens_lsp.features.state import ServerState
from budgetlens_lsp.workspace_index import WorkspaceIndex


def tightest(steps: list[StepBudget]) -> StepBudget | None:
    return min(steps, key=lambda s: (s.headroom, s.pipeline, s.index), default=None)


def _location_args(conv: Converter, loc: Location) -> dict[str, Any]:
    rng = conv.range(loc.file, loc.range)
    return {"uri": uri_from_path(loc.file),
            "range": {"start": {"line": rng.start.line, "character": rng.start.character},
                      "end": {"line": rng.end.line, "character": rng.end.character}}}


def _open_step(conv: Converter, step: StepBudget, title: str) -> types.Command:
    return types.Command(title=title, command=SHOW_LOCATION,
                         arguments=[_location_args(conv, step.name_location or step.location)])


def _lens(conv: Converter, path: str, rng: Range, command: types.Command) -> types.CodeLens:
    line = rng.start.line
    return types.CodeLens(range=conv.range(path, Range.at(line, 0)), command=command)


def pipeline_lenses(index: WorkspaceIndex, path: str, uri: str) -> list[types.CodeLens]:
    settings = index.snapshot.settings.lenses
    conv = index.converter()
    report = index.report_for(path)
    if report is None:
        return []
    report_command = types.Command(title="", command=SHOW_REPORT, arguments=[{"uri": uri}])
    lenses: list[types.CodeLens] = []
    if settings.steps and report.window is not None and report.context is not None:
        lenses += _step_lenses(conv, report, path, report_command)
    if path.endswith(PROMPT_SUFFIXES):  # front matter and body: no pipeline keys below
        return lenses + (_variable_lenses(conv, report, path, report_command)
                         if settings.steps else [])
    text = index.text_of(path)
    doc = parse_yaml(text)[0] if text is not None else None
    if doc is None:
        return lenses
    if settings.settings:
        lenses += _settings_lens(index, conv, doc, path)
    if settings.steps:
        lenses += _injection_lens(conv, report, doc, path, report_command)
        lenses += _extends_lens(conv, report, doc, path)
    return lenses


def _variable_lenses(conv: Converter, report: PipelineReport, path: str,
                     report_command: types.Command) -> list[types.CodeLens]:
    """A prompt file's variable headroom (``{{input}}: up to 5,731 tokens on gpt-4o-mini
    with 2,000 output``), above the message that first reads them: the report's BL079."""
    return [_lens(conv, path, d.range, _titled(report_command, d.message))
            for d in report.diagnostics
            if d.code == codes.PROMPT_VARIABLE_HEADROOM and d.file == path]


def _titled(command: types.Command, title: str) -> types.Command:
    return types.Command(title=title, command=command.command, arguments=command.arguments)


def _step_lenses(conv: Converter, report: PipelineReport, path: str,
                 report_command: types.Command) -> list[types.CodeLens]:
    """Above each step defined here: its budget sum, and its injection split if any."""
    lenses: list[types.CodeLens] = []
    for i, step in enumerate(report.steps):
        if os.path.normpath(step.defined_in) != path:
            continue
        lenses.append(_lens(conv, path, step.location.range,
                            _titled(report_command, budget_sum(step))))
        split = report.injection.step(i) if report.injection else None
        if split is not None:
            lenses.append(_lens(conv, path, step.location.range,
                                _titled(report_command, split.label)))
    return lenses


def _settings_lens(index: WorkspaceIndex, conv: Converter, doc: YamlDocument,
                   path: str) -> list[types.CodeLens]:
    """Above ``settings``: the tightest step of every pipeline that reads them."""
    if doc.span(("settings",)) is None:
        return []
    users = [s for r in index.reports_using(path) for s in r.steps
             if r.window is not None and r.context is not None]
    worst = tightest(users)
    key = doc.key_range(("settings",))
    if worst is None or key is None:
        return []
    where = step_label(worst) if worst.pipeline != path else worst.step
    return [_lens(conv, path, key, _open_step(
        conv, worst, f"tightest step: {where} ({headroom_text(worst)})"))]


def _injection_lens(conv: Converter, report: PipelineReport, doc: YamlDocument, path: str,
                    report_command: types.Command) -> list[types.CodeLens]:
    """Above ``settings.injection``: the tightest step's injection split."""
    key = doc.key_range(("settings", "injection"))
    if report.injection is None or key is None or not report.injection.steps:
        return []
    tight = min(report.injection.steps, key=lambda s: s.budget.total_budget)
    return [_lens(conv, path, key,
                  _titled(report_command, f"tightest {tight.step}: {tight.label}"))]


def _extends_lens(conv: Converter, report: PipelineReport, doc: YamlDocument,
                  path: str) -> list[types.CodeLens]:
    """Above ``extends``: how the inherited steps fare."""
    if doc.span(("extends",)) is None:
        return []
    inherited = [s for s in report.steps if os.path.normpath(s.defined_in) != path]
    worst = tightest(inherited)
    key = doc.key_range(("extends",))
    if worst is None or key is None or report.window is None:
        return []
    n = len(inherited)
    return [_lens(conv, path, key, _open_step(
        conv, worst, f"{n} inherited step{'s' if n != 1 else ''} · tightest"
                     f" {worst.step} ({headroom_text(worst)})"))]


def prompt_lenses(index: WorkspaceIndex, path: str) -> list[types.CodeLens]:
    if not index.snapshot.settings.lenses.prompts:
        return []
    steps = index.steps_using_prompt(path)
    in_prompts_dir = os.path.basename(os.path.dirname(path)) == "prompts"
    if not steps and not in_prompts_dir:
        return []
    conv = index.converter()
    reports = {s.pipeline: index.reports[s.pipeline] for s in steps if s.pipeline in index.reports}
    if steps:
        tokens = steps[0].system_prompt.value
        tokenizer = reports[steps[0].pipeline].tokenizer or DEFAULT_TOKENIZER
    else:
        text = index.text_of(path)
        if text is None:
            return []
        spec = index.snapshot.settings.tokenizer or DEFAULT_TOKENIZER
        try:
            counter = index.cache.counter(get_tokenizer(spec))
        except TokenizerError:
            counter = index.cache.counter(get_tokenizer(DEFAULT_TOKENIZER))
        tokens, tokenizer = counter.count(text), counter.name
    n_steps, n_pipes = len(steps), len(reports)
    title = (f"{approx_mark(tokenizer)}{format_int(tokens)} tokens ({tokenizer})"
             f" · used by {n_steps}"
             f" step{'s' if n_steps != 1 else ''} in {n_pipes}"
             f" pipeline{'s' if n_pipes != 1 else ''}")
    worst = tightest(steps)
    if worst is None:  # informational; a click just shows the top of the prompt
        command = types.Command(title=title, command=SHOW_LOCATION, arguments=[
            _location_args(conv, Location(path, Range.at(0, 0)))])
    else:
        command = _open_step(conv, worst, title)
    return [types.CodeLens(range=types.Range(start=types.Position(line=0, character=0),
                                             end=types.Position(line=0, character=0)),
                           command=command)]


def code_lenses(index: WorkspaceIndex, path: str | None, uri: str) -> list[types.CodeLens]:
    if path is None:
        return []
    if path.endswith((".yaml", ".yml", *PROMPT_SUFFIXES)):
        return pipeline_lenses(index, path, uri)
    if path.endswith(".txt"):
        return prompt_lenses(index, path)
    return []


async def on_code_lens(ctx: ServerState, params: types.CodeLensParams
                       ) -> list[types.CodeLens]:
    uri = params.text_document.uri
    return await ctx.session.query(code_lenses, ctx.index, readable(ctx, uri), uri)


def refresh(ctx: ServerState) -> None:
    """After an analysis: ask a client that supports it to fetch the lenses again."""
    if ctx.client.lens_refresh:
        ctx.server.workspace_code_lens_refresh(None)
