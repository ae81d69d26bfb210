"""Hover on the budget keys of a pipeline: the contract math of the steps the value affects,
where an inherited value comes from, and a prompt's token count and first lines.

Keys: ``max_context_tokens``, ``max_history_tokens``, ``budget_safety_margin_tokens``
(under ``settings``), ``max_output_tokens`` / ``max_tokens`` / ``prompt_key`` (in a step),
a step's request terms ``tools`` / ``response_schema`` / ``reasoning`` (their tokens, how
they were counted, the step's window and input limit),
``extends`` and ``settings.injection`` (each step's injection split). The hovered key is
found with the core's positioned YAML parser; every number comes from the core's reports.
"""

from __future__ import annotations

import os

from lsprotocol import types

from budgetlens.contract.discovery import PROMPT_SUFFIXES
from budgetlens.contract.results import PipelineReport, StepBudget, Term
from budgetlens.source import Position, Range
from budgetlens.yamldoc.parse import YamlDocument, YamlPath, parse_yaml
from budgetlens_lsp.convert import format_int
from budgetlens_lsp.features.shared import budget_sum, readable, step_label
from budgetlens_lsp.features.state import ServerState
from budgetlens_lsp.workspace_index import WorkspaceIndex

SETTING_TERMS = {"max_context_tokens": "context", "max_history_tokens": "history",
                 "budget_safety_margin_tokens": "margin"}
STEP_KEYS = ("max_output_tokens", "max_tokens", "prompt_key", "tools", "response_schema",
             "reasoning")
#: A step's own terms (docs/pipeline-format.md): their hover says which level applied.
STEP_TERM_KEYS = ("serving", "gateway", "variant", "use_context", "max_context_tokens",
                  "max_history_tokens")
#: a step's request terms (contract/terms.py): ``_term_hover`` (a step's ``model`` has the
#: registry's hover, features/models.py)
TERM_KEYS = ("tools", "response_schema", "reasoning")
PROMPT_PREVIEW_LINES = 5


def _contains(rng: Range | None, pos: Position) -> bool:
    return rng is not None and rng.start <= pos <= rng.end


def key_at(doc: YamlDocument, pos: Position) -> tuple[YamlPath, Range] | None:
    """The path of the hovered key we explain (on its key or its value), and its range."""
    for path, span in doc.spans.items():
        if not path or not isinstance(path[-1], str):
            continue
        name = path[-1]
        wanted = ((len(path) == 2 and path[0] == "settings" and name in SETTING_TERMS)
                  or (len(path) == 3 and path[0] == "steps" and isinstance(path[1], int)
                      and (name in STEP_KEYS or name in STEP_TERM_KEYS))
                  or (path == ("extends",)) or (path == ("settings", "injection")))
        if not wanted:
            continue
        key_rng = span.key
        if _contains(key_rng, pos) or _contains(span.value, pos):
            start = key_rng.start if key_rng is not None else span.value.start
            return path, Range(start, span.value.end)
    return None


def _same_place(term: Term, path: str, rng: Range | None) -> bool:
    loc = term.location
    return (loc is not None and rng is not None and os.path.normpath(loc.file) == path
            and loc.range == rng)


def _where(term: Term) -> str:
    if term.location is None:
        return term.source or "default"
    line = term.location.range.start.line + 1
    return f"{os.path.basename(term.location.file)}:{line}"


def _steps_table(steps: list[StepBudget]) -> list[str]:
    lines = []
    for s in steps:
        mark = "✅" if s.fits else "❌"
        lines.append(f"- {mark} `{step_label(s)}`: {budget_sum(s)}")
    return lines


def _affected(index: WorkspaceIndex, path: str, term_name: str,
              rng: Range | None) -> list[StepBudget]:
    out = []
    for report in index.reports_using(path):
        for s in report.steps:
            term = getattr(s, term_name)
            if isinstance(term, Term) and _same_place(term, path, rng):
                out.append(s)
    return out


def _pipelines_count(steps: list[StepBudget]) -> str:
    n = len({s.pipeline for s in steps})
    return f"{len(steps)} step{'s' if len(steps) != 1 else ''} in {n} pipeline" + \
        ("s" if n != 1 else "")


def _setting_hover(index: WorkspaceIndex, path: str, doc: YamlDocument, key: str) -> list[str]:
    rng = doc.value_range(("settings", key))
    value = doc.node(("settings", key))
    term_name = SETTING_TERMS[key]
    steps = _affected(index, path, term_name, rng)
    out = [f"**{key}** = `{value}`", ""]
    if steps:
        out.append(f"Used by {_pipelines_count(steps)}:")
        out.append("")
        out.extend(_steps_table(steps))
    else:
        overriders = sorted({os.path.basename(r.pipeline) for r in index.reports_using(path)
                             if r.pipeline != path})
        out.append("No call_model step uses this value"
                   + (f" (pipelines reading this file: {', '.join(overriders)}"
                      " override it or have no steps)." if overriders else "."))
    report = index.report_for(path)
    if report is not None and report.window is not None:
        out += ["", f"Window: {format_int(report.window.value)} tokens"
                    f" ({_where(report.window)}), policy `{report.policy.value}`."]
    return out


def _step_of(index: WorkspaceIndex, path: str, step_index: int) -> list[StepBudget]:
    """Every evaluation of the step at ``steps[step_index]`` of ``path`` (in each pipeline
    that runs it)."""
    return [s for r in index.reports_using(path) for s in r.steps
            if os.path.normpath(s.defined_in) == path and s.index == step_index]


def _output_hover(index: WorkspaceIndex, path: str, doc: YamlDocument, step_index: int,
                  key: str) -> list[str]:
    value = doc.node(("steps", step_index, key))
    runs = _step_of(index, path, step_index)
    out = [f"**{key}** = `{value}`", ""]
    used = [s for s in runs if s.output_source == key]
    if runs and not used:
        out.append(f"Not the output limit in use: the step uses {runs[0].output_source}"
                   f" = {runs[0].output.value} ({_where(runs[0].output)}).")
    if used:
        out.append(f"Output limit of {_pipelines_count(used)}:")
        out.append("")
        out.extend(_steps_table(used))
        ceiling = index.reports[used[0].pipeline].output_ceiling
        if ceiling is not None:
            out += ["", f"Model output ceiling: {format_int(ceiling.value)}"
                        f" ({_where(ceiling)})."]
    return out


def _prompt_hover(index: WorkspaceIndex, path: str, doc: YamlDocument,
                  step_index: int) -> list[str]:
    key = doc.node(("steps", step_index, "prompt_key"))
    runs = _step_of(index, path, step_index)
    out = [f"**prompt_key** = `{key}`", ""]
    if not runs or runs[0].prompt_file is None:
        out.append("The prompt file is not known (no config.json, or the step is not"
                   " checked).")
        return out
    s = runs[0]
    prompt = s.prompt_file or ""
    tokenizer = index.reports[s.pipeline].tokenizer
    out.append(f"System prompt `{os.path.relpath(prompt, os.path.dirname(path))}`:"
               f" **{format_int(s.system_prompt.value)} tokens** ({tokenizer}); template"
               f" {s.template.value}, format overhead {s.format_overhead.value}"
               f" → fixed {s.fixed.value}.")
    text = index.text_of(prompt)
    if text is not None:
        lines = text.splitlines()
        preview = "\n".join(lines[:PROMPT_PREVIEW_LINES])
        more = len(lines) - PROMPT_PREVIEW_LINES
        out += ["", "```text", preview.replace("```", "`​``"), "```"]
        if more > 0:
            out.append(f"… {more} more line{'s' if more != 1 else ''}")
    out += ["", *_steps_table(runs)]
    return out


def _step_terms_hover(index: WorkspaceIndex, path: str, step_index: int,
                      key: str) -> list[str]:
    """A step's own terms: its window, context, history, margin and gateway cap, each with
    the level that set it (the step, config.json per model, the workspace, the registry)."""
    runs = _step_of(index, path, step_index)
    out = [f"**{key}** (this step's own terms)", ""]
    if not runs:
        return [*out, "The step is not checked yet."]
    for s in runs:
        out.append(f"`{step_label(s)}`:")
        out.append(f"- window {format_int(s.window.value)}: {s.window.source}")
        out.append(f"- context {format_int(s.context.value)}: {s.context.source}")
        out.append(f"- history {format_int(s.history.value)}: {s.history.source}")
        out.append(f"- margin {format_int(s.margin.value)}: {s.margin.source}")
        if s.gateway_cap is not None:
            sent = s.input_tokens
            out.append(f"- gateway cap {format_int(s.gateway_cap.value)} input tokens"
                       f" ({format_int(sent)} sent): {s.gateway_cap.source}")
    return [*out, "", *_steps_table(runs)]


def _term_hover(index: WorkspaceIndex, path: str, step_index: int, key: str) -> list[str]:
    """A step's request term: its tokens and how they were counted, the step's window and
    input limit, and the step's sum."""
    runs = _step_of(index, path, step_index)
    out = [f"**{key}**", ""]
    if not runs:
        return [*out, "The step is not checked yet."]
    s = runs[0]
    term = getattr(s, key, None)
    if term is None:
        out.append("Not counted (see the diagnostic on the value).")
    elif key == "reasoning":
        where = "inside the output limit: adds nothing to the total" \
            if s.reasoning_in_output else "added to the total beside the output"
        out.append(f"**{format_int(term.value)} tokens**, {where}"
                   f" ({term.source.removeprefix('reasoning: ')}).")
    else:
        out.append(f"**{format_int(term.value)} tokens** in the fixed part ({term.source}).")
    out += ["", f"Window: {format_int(s.window.value)} ({s.window.source})."]
    if s.max_input is not None:
        out.append(f"Input limit: {format_int(s.max_input.value)} ({s.max_input.source});"
                   f" the step sends {format_int(s.input_tokens)}.")
    return [*out, "", *_steps_table(runs)]


def _inherited_terms(report: PipelineReport) -> list[str]:
    rows: list[tuple[str, Term]] = []
    if report.context is not None and report.context.inherited:
        rows.append(("max_context_tokens", report.context))
    for name, label in (("history", "max_history_tokens"),
                        ("margin", "budget_safety_margin_tokens")):
        for s in report.steps:
            term = getattr(s, name)
            if term.inherited and term.location is not None:
                rows.append((label, term))
                break
    steps = [s for s in report.steps if s.inherited]
    out = [f"- `{label}` = {term.value} from {_where(term)}" for label, term in rows]
    if steps:
        out.append(f"- steps {', '.join(s.step for s in steps)} from"
                   f" {os.path.basename(steps[0].defined_in)}")
    return out


def _extends_hover(index: WorkspaceIndex, path: str, doc: YamlDocument) -> list[str]:
    value = doc.node(("extends",))
    out = [f"**extends** `{value}`", ""]
    report = index.report_for(path)
    if report is None:
        return [*out, "This pipeline is not checked yet."]
    if len(report.chain) > 1:
        out.append("Chain: " + " → ".join(f"`{os.path.basename(p)}`" for p in report.chain))
    inherited = _inherited_terms(report)
    if inherited:
        out += ["", "Inherited:", *inherited]
    steps = [s for s in report.steps if s.inherited]
    if steps:
        out += ["", *_steps_table(steps)]
    return out


def _injection_hover(index: WorkspaceIndex, path: str) -> list[str]:
    report = index.report_for(path)
    inj = report.injection if report is not None else None
    out = ["**settings.injection**: the unified injection budget (knowledge cards + bucket"
           " content), per `call_model` step, with the step's fixed + history tokens as the"
           " tokens used before injection."]
    if inj is None or inj.policy is None:
        return [*out, "", "The policy has errors; see the diagnostics."]
    p = inj.policy
    out.append(f"At most {format_int(p.max_injection_tokens_absolute)} tokens or"
               f" {p.max_injection_tokens_pct_of_context:.0%} of what is left; shares"
               f" {p.knowledge_card_share_default:.2f} cards / "
               f"{p.bucket_content_share_default:.2f} buckets.")
    out.append("")
    for split in inj.steps:
        d = split.direct_target
        out.append(f"- `{split.step}`: {split.label} (bucket as direct target: cards"
                   f" {format_int(d.knowledge_card_budget)} · buckets"
                   f" {format_int(d.bucket_budget)})")
    return out


def plain_text(lines: list[str]) -> str:
    """The hover's Markdown as plain text for a client whose ``hover.contentFormat`` prefers
    ``plaintext``: no ``**``, no backticks; a fenced block becomes indented lines."""
    out: list[str] = []
    fenced = False
    for line in lines:
        if line.startswith("```"):
            fenced = not fenced
            continue
        if fenced:
            out.append("    " + line.replace("`\u200b``", "```"))
        else:
            out.append(line.replace("**", "").replace("`", ""))
    return "\n".join(out)


def _step_key_hover(index: WorkspaceIndex, path: str, doc: YamlDocument, step_index: int,
                    name: str) -> list[str]:
    """The hover of a key of a step: its prompt, its own terms, a request term, or its
    output limit."""
    if name == "prompt_key":
        return _prompt_hover(index, path, doc, step_index)
    if name in STEP_TERM_KEYS:
        return _step_terms_hover(index, path, step_index, name)
    if name in TERM_KEYS:
        return _term_hover(index, path, step_index, name)
    return _output_hover(index, path, doc, step_index, name)


def hover(index: WorkspaceIndex, path: str | None, pos: types.Position,
          markdown: bool = True) -> types.Hover | None:
    if path is None or not path.endswith((".yaml", ".yml", *PROMPT_SUFFIXES)):
        return None
    text = index.text_of(path)
    if text is None:
        return None
    if path.endswith(PROMPT_SUFFIXES):
        return _prompt_file_hover(index, path, pos, markdown)
    doc, _ = parse_yaml(text)
    if doc is None:
        return None
    conv = index.converter()
    core_pos = conv.core_position(path, pos)
    found = key_at(doc, core_pos)
    if found is None:
        return None
    key_path, rng = found
    lines = _key_hover(index, path, doc, key_path)
    contents = (types.MarkupContent(kind=types.MarkupKind.Markdown, value="\n".join(lines))
                if markdown else
                types.MarkupContent(kind=types.MarkupKind.PlainText, value=plain_text(lines)))
    return types.Hover(contents=contents, range=conv.range(path, rng))


def _key_hover(index: WorkspaceIndex, path: str, doc: YamlDocument, key_path: YamlPath
               ) -> list[str]:
    """The hover lines of the pipeline key at ``key_path``."""
    name = key_path[-1]
    if key_path == ("settings", "injection"):
        return _injection_hover(index, path)
    if key_path[0] == "settings":
        return _setting_hover(index, path, doc, str(name))
    if key_path == ("extends",):
        return _extends_hover(index, path, doc)
    return _step_key_hover(index, path, doc, int(key_path[1]), str(name))


def _prompt_file_hover(index: WorkspaceIndex, path: str, pos: types.Position,
                       markdown: bool) -> types.Hover | None:
    """A prompt file's step budget, on the lines of its model, output limit or first
    message (the places its diagnostics and lens point at)."""
    report = index.report_for(path)
    if report is None:
        return None
    conv = index.converter()
    line = conv.core_position(path, pos).line
    for s in report.steps:
        places = [loc.range for loc in (s.name_location, s.output.location, s.location)
                  if loc is not None and loc.file == path]
        hit = next((r for r in places if r.start.line <= line <= r.end.line), None)
        if hit is None:
            continue
        lines = [f"**{s.step}**: {format_int(s.total)} of {format_int(s.window.value)}"
                 f" tokens", "", *_steps_table([s]), "",
                 f"Output {format_int(s.output.value)} ({_where(s.output)})."]
        contents = (types.MarkupContent(kind=types.MarkupKind.Markdown, value="\n".join(lines))
                    if markdown else types.MarkupContent(kind=types.MarkupKind.PlainText,
                                                         value=plain_text(lines)))
        return types.Hover(contents=contents, range=conv.range(path, hit))
    return None


async def on_hover(ctx: ServerState, params: types.HoverParams) -> types.Hover | None:
    path = readable(ctx, params.text_document.uri)
    return await ctx.session.query(hover, ctx.index, path, params.position,
                                   ctx.client.hover_markdown)
