"""Models in the editor: the target matrix lens and hover, hover on a model name, and
completion of model names.

- above each step of a pipeline whose config.json has ``targets``: ``fits: gpt-4o ✓ ·
  llama-3.1-8b-instruct ✗ (412 over)`` (``≈`` marks a count made with an approximate
  tokenizer); hover on the step's ``id`` (or ``name``): the sums per target model;
- hover on a ``model`` value (a step's, or config.json's ``model`` or ``targets`` entry):
  provider, window, output limit, tokenizer, exact or approximate, source and date;
- completion of registry names on ``model:`` values and in config.json's ``targets``.

The registry is read at the first request that needs it, never at start-up.
"""

from __future__ import annotations

import json
import os
import re

from lsprotocol import types

from budgetlens.contract.models_file import (
    load_models_file,
    overlay,
    user_models_path,
    workspace_models_path,
)
from budgetlens.contract.targets import TargetMatrix, target_matrix
from budgetlens.models import ModelInfo, Registry, load_registry
from budgetlens.models.resolution import query_of
from budgetlens.source import Position, Range
from budgetlens.yamldoc.parse import YamlDocument, YamlPath, parse_yaml
from budgetlens_lsp.features.shared import SHOW_REPORT, readable
from budgetlens_lsp.features.state import ServerState
from budgetlens_lsp.workspace_index import WorkspaceIndex

#: A model name being typed at the end of a line prefix: after ``model:`` (YAML or JSON)
#: or inside config.json's ``"targets": [...]``. The match ends at the end of the prefix, so
#: it is made on the reversed prefix, from its start: one attempt (a search for the forward
#: pattern ``(?:["']?model["']?\s*:\s*|"targets"\s*:\s*\[(?:[^\]]*,)?\s*)["']?(?P<word>
#: [\w./:@-]*)$`` would try every "model" on a long line and read on to its end from each:
#: quadratic). ``_typed_word`` gives the word the forward pattern gives.
_TYPING_REVERSED = re.compile(
    r"""(?P<word>[\w./:@-]*)["']?"""
    r"""(?:\s*:\s*["']?ledom["']?|\s*(?:,[^\]]*)?\[\s*:\s*"stegrat")""")


def _typed_word(prefix: str) -> str | None:
    """The model name being typed at the end of ``prefix``, or None where none is."""
    match = _TYPING_REVERSED.match(prefix[::-1])
    return None if match is None else match.group("word")[::-1]


def _is_pipeline(path: str | None) -> bool:
    return path is not None and path.endswith((".yaml", ".yml"))


def _matrix(index: WorkspaceIndex, path: str) -> TargetMatrix | None:
    """The target matrix of the pipeline at ``path`` (None without targets)."""
    report = index.report_for(path)
    if report is None or not report.steps:
        return None
    matrix = target_matrix(path, files=index.files_for(path), options=index.options_for(path),
                           cache=index.cache)
    return matrix if matrix.fits else None


# ----------------------------------------------------------------------------- lenses
def target_lenses(index: WorkspaceIndex, path: str | None, uri: str) -> list[types.CodeLens]:
    """Above each step defined in ``path``: how it fares against every target."""
    if not _is_pipeline(path) or path is None or not index.snapshot.settings.lenses.steps:
        return []
    matrix = _matrix(index, path)
    report = index.report_for(path)
    if matrix is None or report is None:
        return []
    conv = index.converter()
    out = []
    for i, step in enumerate(report.steps):
        if os.path.normpath(step.defined_in) != path or not matrix.for_step(i):
            continue
        line = step.location.range.start.line
        out.append(types.CodeLens(range=conv.range(path, Range.at(line, 0)), command=types.Command(
            title=matrix.lens(i), command=SHOW_REPORT, arguments=[{"uri": uri}])))
    return out


async def on_code_lens(ctx: ServerState, params: types.CodeLensParams
                       ) -> list[types.CodeLens]:
    uri = params.text_document.uri
    return await ctx.session.query(target_lenses, ctx.index, readable(ctx, uri), uri)


# ------------------------------------------------------------------------------ hover
def _contains(rng: Range | None, pos: Position) -> bool:
    return rng is not None and rng.start <= pos <= rng.end


def _hovered(doc: YamlDocument, pos: Position) -> tuple[YamlPath, Range] | None:
    """A hovered ``model`` value, ``targets`` entry, or step ``id``/``name`` (key or value)."""
    for path, span in doc.spans.items():
        wanted = (path == ("model",) or (len(path) == 2 and path[0] == "targets")
                  or (len(path) == 3 and path[0] == "steps" and path[2] in ("model", "id",
                                                                            "name")))
        if wanted and (_contains(span.value, pos) or _contains(span.key, pos)):
            start = span.key.start if span.key is not None else span.value.start
            return path, Range(start, span.value.end)
    return None


def model_markdown(info: ModelInfo) -> str:
    return info.describe()


def _hover_text(index: WorkspaceIndex, path: str, doc: YamlDocument,
                key: YamlPath) -> str | None:
    if key[-1] in ("id", "name"):
        if not _is_pipeline(path):
            return None
        matrix = _matrix(index, path)
        report = index.report_for(path)
        if matrix is None or report is None:
            return None
        i = next((n for n, s in enumerate(report.steps) if s.index == key[1]
                  and os.path.normpath(s.defined_in) == path), None)
        if i is None or not matrix.for_step(i):
            return None
        return (f"**{report.steps[i].step}** against the target models"
                " (≈: counted with an approximate tokenizer)\n\n" + matrix.hover(i))
    name = doc.node(key)
    if not isinstance(name, str):
        return None
    registry = registry_for(index, path)
    info = registry.get(name)
    if info is None:
        suggestion = registry.suggest(name)
        return (f"**{name}** is not in the model registry ({registry.date})"
                + (f"; did you mean `{suggestion}`?" if suggestion else
                   f"; run `budgetlens models {query_of(name)}` to find its name."))
    return model_markdown(info)


def _models_file_setting(text: str | None) -> str | None:
    try:
        data = json.loads(text) if text else None
    except ValueError:
        return None
    named = data.get("models_file") if isinstance(data, dict) else None
    return named if isinstance(named, str) and named.strip() else None


def registry_for(index: WorkspaceIndex, path: str) -> Registry:
    """The registry the check of ``path`` (a pipeline, or a config.json: the first
    pipeline reading it) used: the bundled one with the models.json files among its
    report's inputs (the user's, the workspace's) over it, as their texts are now."""
    report = index.report_for(path) if _is_pipeline(path) else \
        next(iter(index.reports_using(path)), None)
    if report is None or report.config is None:
        return load_registry()
    environ = index.options_for(report.pipeline).environ or os.environ
    candidates = (user_models_path(environ), workspace_models_path(
        report.config, _models_file_setting(index.text_of(report.config))))
    files = []
    for candidate in candidates:
        text = index.text_of(candidate) if candidate and candidate in report.inputs else None
        if candidate and text is not None:
            files.append(load_models_file(candidate, text))
    return overlay(load_registry(), files)[0] if files else load_registry()


def hover(index: WorkspaceIndex, path: str | None, pos: types.Position) -> types.Hover | None:
    if path is None or not (_is_pipeline(path) or os.path.basename(path) == "config.json"):
        return None
    text = index.text_of(path)
    doc = parse_yaml(text)[0] if text is not None else None
    if doc is None:
        return None
    conv = index.converter()
    found = _hovered(doc, conv.core_position(path, pos))
    if found is None:
        return None
    value = _hover_text(index, path, doc, found[0])
    if value is None:
        return None
    return types.Hover(contents=types.MarkupContent(kind=types.MarkupKind.Markdown,
                                                    value=value),
                       range=conv.range(path, found[1]))


async def on_hover(ctx: ServerState, params: types.HoverParams) -> types.Hover | None:
    path = readable(ctx, params.text_document.uri)
    return await ctx.session.query(hover, ctx.index, path, params.position)


# ------------------------------------------------------------------------- completion
def _item(info: ModelInfo, rng: types.Range) -> types.CompletionItem:
    approx = "" if info.exact else " · ≈ approximate counts"
    output = f"{info.max_output:,}" if info.max_output else "?"
    return types.CompletionItem(
        label=info.name, kind=types.CompletionItemKind.Value,
        detail=f"{info.provider} · window {info.window:,} · output {output}"
               f" · {info.tokenizer}{approx}",
        documentation=info.describe(),  # plain text: every client shows it
        text_edit=types.TextEdit(range=rng, new_text=info.name))


def completions(index: WorkspaceIndex, path: str | None,
                pos: types.Position) -> types.CompletionList | None:
    """Registry names where a model name is being typed (a ``model`` value, a target)."""
    if path is None or not (_is_pipeline(path) or os.path.basename(path) == "config.json"):
        return None
    text = index.text_of(path)
    if text is None:
        return None
    conv = index.converter()
    core = conv.core_position(path, pos)
    lines = text.splitlines()
    prefix = lines[core.line][:core.character] if core.line < len(lines) else ""
    word = _typed_word(prefix)
    if word is None:
        return None
    start = conv.position(path, Position(core.line, core.character - len(word)))
    rng = types.Range(start=start, end=pos)
    registry = registry_for(index, path)
    return types.CompletionList(is_incomplete=False, items=[
        _item(info, rng) for info in registry.models.values()])


async def on_completion(ctx: ServerState, params: types.CompletionParams
                        ) -> types.CompletionList | None:
    path = readable(ctx, params.text_document.uri)
    return await ctx.session.query(completions, ctx.index, path, params.position)
