"""Diagnostics: every file's list (pipelines, config.json, prompt files, JSON buffers), for
``publishDiagnostics`` (push) and ``textDocument/diagnostic`` (pull).

Pipeline and config diagnostics are the core's, as they are. A prompt file gets one more
diagnostic at its top when a step that uses it is over budget, naming every such pipeline
and step, with each step's place as related information; the same rule (BL050/BL052) and
the worst severity of those steps' own diagnostics.

A file budgetlens failed on (an exception while checking it, see ``workspace_index.py``)
gets one BL009 error on its first line instead, so it never looks clean; a JSON buffer too
large to analyse as you type gets a BL201 information diagnostic saying so.

:func:`analyze` is the analysis function the session runs on its worker thread: the index's
update, then the diagnostics of every file whose set changed, converted to LSP with one
:class:`~budgetlens_lsp.convert.Converter` for the whole batch (each file's text is read and
indexed once, however many of the batch's diagnostics point into it). :func:`publish` pushes
them (on the loop); :func:`pull` answers ``textDocument/diagnostic``.

Superseded analyses are not delivered: when newer edits exist by the time an analysis ends
(``Snapshot.superseded``), it is *held* — nothing converted, nothing sent, ``shown`` left as
the client has it — and the next analysis delivers every difference since the last delivery.
A streak of held analyses ends after ``scheduling.MAX_HOLD_S`` (the next one runs to its end
and is delivered), so a long typing burst still sees fresh diagnostics now and then. Versions only
grow: each analysis runs on a newer snapshot than the one before, and :func:`publish` drops
a push whose version is older than one already sent for that document.
"""

from __future__ import annotations

import hashlib
import logging
import os
from collections.abc import Sequence
from dataclasses import dataclass, field

import attrs
from lsprotocol import types

from budgetlens import codes
from budgetlens.contract.lint import COMMENT_SUFFIXES, ConfigLint, lint_pass
from budgetlens.contract.policy import Policy
from budgetlens.contract.results import PipelineReport, StepBudget
from budgetlens.source import (
    Diagnostic,
    FailureStage,
    Range,
    Related,
    Severity,
    unique_diagnostics,
)
from budgetlens_lsp import scheduling
from budgetlens_lsp.convert import SOURCE, Converter, format_int, uri_from_path
from budgetlens_lsp.features.json_documents import json_diagnostic, too_large_diagnostic
from budgetlens_lsp.features.shared import step_label
from budgetlens_lsp.features.state import Analysis, ServerState
from budgetlens_lsp.scheduling import AnalysisResult
from budgetlens_lsp.workspace_index import (
    Failure,
    IndexMode,
    ProgressHook,
    Snapshot,
    Stage,
    WorkspaceIndex,
    one_line,
)

log = logging.getLogger(__name__)

#: The result the session gets from :func:`analyze`: the pushes of one analysis and its flags.
Batch = AnalysisResult[types.PublishDiagnosticsParams]

_RANK = {Severity.ERROR: 0, Severity.WARNING: 1, Severity.INFORMATION: 2, Severity.HINT: 3}
_CONTRACT = (codes.CONTRACT_VIOLATION, codes.CANNOT_FIT)


def is_prompt_path(path: str) -> bool:
    return path.endswith(".txt")


def _enabled(index: WorkspaceIndex, path: str) -> bool:
    toggles = index.snapshot.settings.diagnostics
    if is_prompt_path(path):
        return toggles.prompts
    return toggles.pipelines


def _step_severity(report: PipelineReport, step: StepBudget) -> Severity:
    found = [d.severity for d in report.diagnostics
             if d.code in _CONTRACT and d.step == step.step]
    if found:
        return min(found, key=_RANK.__getitem__)
    return Severity.ERROR if report.policy is Policy.FAIL_FAST else Severity.WARNING


def prompt_diagnostics(index: WorkspaceIndex, hidden: frozenset[tuple[str | None, str | None]]
                       = frozenset()) -> dict[str, list[Diagnostic]]:
    """One diagnostic per prompt file that makes a step over budget (a step whose BL050 or
    BL052 is ``hidden``, suppressed by a comment or turned off, is left out)."""
    broken: dict[str, list[tuple[PipelineReport, StepBudget]]] = {}
    for report in index.reports.values():
        for step in report.steps:
            if step.prompt_file and not step.fits and step.output_source != "missing" \
                    and report.window is not None and report.context is not None \
                    and (report.pipeline, step.step) not in hidden:
                broken.setdefault(os.path.normpath(step.prompt_file), []).append((report, step))
    out: dict[str, list[Diagnostic]] = {}
    for path, pairs in broken.items():
        pairs.sort(key=lambda rs: (rs[1].pipeline, rs[1].index))
        pipelines = sorted({s.pipeline for _, s in pairs})
        severity = min((_step_severity(r, s) for r, s in pairs), key=_RANK.__getitem__)
        text = index.text_of(path) or ""
        first = text.split("\n", 1)[0].rstrip("\r")
        tokens = pairs[0][1].system_prompt.value
        parts = [f"{step_label(s)} ({format_int(-s.headroom)} over)" for _, s in pairs]
        message = (f"this prompt ({format_int(tokens)} tokens) is used by"
                   f" {len(pairs)} step{'s' if len(pairs) != 1 else ''} over budget in"
                   f" {len(pipelines)} pipeline{'s' if len(pipelines) != 1 else ''}: "
                   + ", ".join(parts))
        related = tuple(Related(s.name_location or s.location,
                                f"{step_label(s)}: total {s.total} > window {s.window.value}")
                        for _, s in pairs)
        code = codes.CANNOT_FIT if all(s.step in r.clamp.unfit for r, s in pairs) \
            else codes.CONTRACT_VIOLATION
        out[path] = [Diagnostic(path, Range.at(0, 0, 0, len(first)), severity, code, message,
                                pairs[0][1].pipeline, pairs[0][1].step, related)]
    return out


def failure_diagnostic(index: WorkspaceIndex, failure: Failure) -> Diagnostic:
    """The BL009 error of a file budgetlens failed on, over its first line."""
    try:
        text = index.text_of(failure.path) or ""
    except Exception:  # the failure may be in reading it
        text = ""
    first = text.split("\n", 1)[0].rstrip("\r")
    what = "check" if failure.stage is not Stage.JSON else "analyse"
    return Diagnostic(failure.path, Range.at(0, 0, 0, len(first)), Severity.ERROR,
                      codes.INTERNAL_ERROR,
                      f"budgetlens could not {what} this file: {failure.error}; details in the"
                      " log", data=FailureStage(failure.stage))


def collect(index: WorkspaceIndex) -> dict[str, list[Diagnostic]]:
    """Every file's diagnostics as they should be shown now."""
    out: dict[str, list[Diagnostic]] = {}
    for path, failure in sorted(index.failures.items()):
        out.setdefault(path, []).append(failure_diagnostic(index, failure))
    reported = unique_diagnostics(d for pipeline in sorted(index.reports)
                                  for d in index.reports[pipeline].diagnostics)
    shown = linted(index, reported)
    for d in shown:
        path = os.path.normpath(d.file)
        if _enabled(index, path):
            out.setdefault(path, []).append(d)
    if index.snapshot.settings.diagnostics.prompts:
        kept = {id(d) for d in shown}
        hidden = frozenset((d.pipeline, d.step) for d in reported
                           if id(d) not in kept and d.code in _CONTRACT)
        for path, diags in prompt_diagnostics(index, hidden).items():
            out.setdefault(path, []).extend(diags)
    for path, contexts in index.json_docs.items():
        diag = json_diagnostic(path, contexts)
        if diag is not None:
            out.setdefault(path, []).append(diag)
    for path, length in index.json_too_large.items():
        out.setdefault(path, []).append(too_large_diagnostic(path, length))
    return out


def linted(index: WorkspaceIndex, reported: list[Diagnostic]) -> list[Diagnostic]:
    """The core's diagnostics as ``budgetlens check`` shows them (``contract.lint``): the
    ``lint`` block of config.json and the suppression comments of the buffers applied, a
    BL080 for each comment of a checked pipeline (open or not) that suppresses nothing, a
    BL013 at a bad ``lint`` block (not applied; ``budgetlens check`` stops with bad usage
    on it). A pipeline the background index has not checked yet is read once it is: its
    comments have nothing to suppress before. ``index.lint_memo`` keeps the comments and
    blocks read, and each file's result, for the next analysis: a pipeline not checked
    again keeps its result (its report, so its text, is the same)."""
    memo = index.lint_memo
    settings = ConfigLint(index.text_of, strict=False, memo=memo)
    # grouped by file, not sorted: ``collect`` groups by file
    shown = lint_pass(reported, settings, index.lint_text, lint_versions(index), memo)
    for folder in memo.folders(index.pipelines):  # a bad lint block is
        settings.in_folder(folder)  # shown even with nothing to filter
    return shown + settings.problems()


def lint_versions(index: WorkspaceIndex) -> dict[str, object]:
    """The files the lint pass reads for comments (checked pipelines and open buffers),
    each with its version (``lint_pass``): a pipeline's report, for which
    ``WorkspaceIndex.lint_text`` gives the same text; None for an open buffer or another
    name of one (read each pass). A copy of the reports, not a loop: the pass runs after
    every analysis, over every pipeline."""
    out: dict[str, object] = dict(index.reports)
    for path in (*index.snapshot.overlay, *index.links.aliased):
        if path.endswith(COMMENT_SUFFIXES):
            out[path] = None
    return out


def to_lsp(index: WorkspaceIndex, diags: list[Diagnostic], conv: Converter | None = None
           ) -> list[types.Diagnostic]:
    """The LSP form of one file's diagnostics (with ``conv``, the converter of a batch);
    if converting them fails, one BL009 error at the top of the file says so (never an
    empty list that reads as "fine")."""
    conv = conv if conv is not None else index.converter()
    try:
        return [conv.diagnostic(d) for d in diags]
    except Exception as exc:
        path = diags[0].file if diags else "?"
        log.exception("converting the diagnostics of %s failed", path)
        index.notify_failure(path, Stage.CONVERT, exc)
        return [types.Diagnostic(
            range=types.Range(start=types.Position(line=0, character=0),
                              end=types.Position(line=0, character=0)),
            message=f"budgetlens could not check this file: {one_line(exc)}; details in"
                    " the log",
            severity=types.DiagnosticSeverity.Error, code=codes.INTERNAL_ERROR,
            source=SOURCE)]


def publish_params(index: WorkspaceIndex,
                   changed: dict[str, list[Diagnostic]]) -> list[types.PublishDiagnosticsParams]:
    snap = index.snapshot
    conv = index.converter()  # one for the batch: a shared prompt is indexed once
    out = []
    for path in sorted(changed):
        try:
            uri = snap.open_uris.get(path) or uri_from_path(path)
        except Exception:  # no URI for this one file: the others are still published
            log.exception("no URI for %r: its diagnostics are not published", path)
            continue
        out.append(types.PublishDiagnosticsParams(
            uri=uri, version=snap.versions.get(uri),
            diagnostics=to_lsp(index, changed[path], conv)))
    return out


def result_id(items: list[types.Diagnostic]) -> str:
    raw = repr([(d.range, d.code, d.message, d.severity) for d in items]).encode()
    return hashlib.blake2b(raw, digest_size=8).hexdigest()


def document_report(analysis: Analysis, path: str | None, previous: str | None
                    ) -> types.DocumentDiagnosticReport:
    """``textDocument/diagnostic``: the full list, or "unchanged" for the same result id."""
    items = to_lsp(analysis.index, analysis.shown.get(path, [])) if path else []
    rid = result_id(items)
    if previous == rid:
        return types.RelatedUnchangedDocumentDiagnosticReport(result_id=rid)
    return types.RelatedFullDocumentDiagnosticReport(items=items, result_id=rid)


# --- the analysis (on the worker thread) -------------------------------------------------------

@dataclass
class Results:
    """What one analysis produced: diagnostics to publish, per path (open or closed)."""

    publish: dict[str, list[Diagnostic]] = field(default_factory=dict)
    more: bool = False  # pipelines are left to check in the background
    held: bool = False  # superseded by newer edits: nothing to deliver, the next one does


def update(analysis: Analysis, snapshot: Snapshot, changed: frozenset[str],
           mode: IndexMode = IndexMode.INCREMENTAL,
           progress: ProgressHook | None = None) -> Results:
    """Update the index, then the diagnostics of every file whose set changed; never raises
    (a failure becomes a BL009 diagnostic on the edited files). Superseded by the time it
    ends, it is held instead, by the policy of ``scheduling`` (held streaks, forced
    analyses)."""
    index = analysis.index
    turn = scheduling.begin(analysis, snapshot)
    changes = index.update(turn.snapshot, changed, mode, progress)
    if changes.failed:
        return _failed(analysis, changes.republish)
    if turn.should_hold():
        analysis.republish.update(changes.republish)
        scheduling.hold(analysis, turn)
        return Results(more=changes.more, held=True)
    always = tuple(sorted(analysis.republish.union(changes.republish)))
    analysis.republish.clear()
    scheduling.end_streak(analysis)
    try:
        publish = _refresh(analysis, always)
    except Exception as exc:
        log.exception("analysis failed for %d changed file(s)", len(changed))
        return _failed(analysis, index.analysis_failed(changed, exc))
    analysis.counts.delivered += 1
    return Results(publish, more=changes.more)


def _failed(analysis: Analysis, paths: tuple[str, ...]) -> Results:
    """The analysis itself raised: each of ``paths`` shows its failure (and only that)."""
    scheduling.end_streak(analysis)
    results = Results(more=analysis.index.backlog != set())
    for path in paths:
        diags = [failure_diagnostic(analysis.index, analysis.index.failures[path])]
        analysis.shown[path] = diags
        results.publish[path] = diags
    return results


def _refresh(analysis: Analysis, always: tuple[str, ...]) -> dict[str, list[Diagnostic]]:
    """Diagnostics of every file whose set changed, plus the buffers ``always`` (their text
    moved, so the same code-point ranges may be other LSP columns)."""
    current = collect(analysis.index)
    changed: dict[str, list[Diagnostic]] = {p: current.get(p, []) for p in always}
    for path in set(current) | set(analysis.shown):
        new = current.get(path, [])
        if new != analysis.shown.get(path, []):
            changed[path] = new
    analysis.index.retired.append(analysis.shown)  # freed once the pushes are out
    analysis.shown = {p: d for p, d in current.items() if d}
    return changed


def analyze(analysis: Analysis, snapshot: Snapshot, changed: frozenset[str], mode: IndexMode,
            progress: ProgressHook | None) -> Batch:
    """The session's analysis function: :func:`update`, in LSP form."""
    results = update(analysis, snapshot, changed, mode, progress)
    release = analysis.index.release
    if results.held:
        return Batch((), more=results.more, held=True, after=release)
    return Batch(publish_params(analysis.index, results.publish), more=results.more,
                 after=release)


# --- delivery (on the loop) ----------------------------------------------------------------------

def for_client(ctx: ServerState, items: Sequence[types.Diagnostic]
               ) -> list[types.Diagnostic]:
    """``items`` as this client can take them: no ``relatedInformation`` unless it declared
    ``publishDiagnostics.relatedInformation`` (the one filter for push and pull)."""
    if ctx.client.related_information:
        return list(items)
    return [attrs.evolve(d, related_information=None) for d in items]


def publish(ctx: ServerState, params_list: Sequence[types.PublishDiagnosticsParams]) -> None:
    """Push to every client; a client that pulls gets its OPEN documents by pull only (so
    nothing is shown twice) and a refresh request instead."""
    for text in ctx.index.take_messages():  # budgetlens failed on a file (BL009)
        ctx.message(text, types.MessageType.Error)
    refresh = False
    for params in params_list:
        if _older_than_sent(ctx, params):
            continue
        if ctx.client.pull and params.uri in ctx.session.documents:
            refresh = True
            if params.uri not in ctx.pushed:
                continue
            params = types.PublishDiagnosticsParams(uri=params.uri, diagnostics=[])
        params.diagnostics = for_client(ctx, params.diagnostics)
        ctx.server.text_document_publish_diagnostics(params)
        if params.diagnostics:
            ctx.pushed.add(params.uri)
        else:
            ctx.pushed.discard(params.uri)
    if refresh and ctx.client.diagnostic_refresh:
        ctx.server.workspace_diagnostic_refresh(None)


def _older_than_sent(ctx: ServerState, params: types.PublishDiagnosticsParams) -> bool:
    """The guard: a push for a version older than one already sent for that document is
    dropped (each analysis runs on a newer snapshot, so this is never expected)."""
    if params.version is None:
        return False
    sent = ctx.session.published_versions
    last = sent.get(params.uri)
    if last is not None and params.version < last:
        log.warning("dropped the diagnostics of %s version %d: version %d was published",
                    params.uri, params.version, last)
        return True
    sent[params.uri] = params.version
    return False


async def pull(ctx: ServerState, params: types.DocumentDiagnosticParams
               ) -> types.DocumentDiagnosticReport:
    path = ctx.session.path_of(params.text_document.uri)
    report = await ctx.session.query(document_report, ctx.analysis, path,
                                     params.previous_result_id)
    if isinstance(report, types.RelatedFullDocumentDiagnosticReport):
        report.items = for_client(ctx, report.items)
    return report


__all__ = ["Batch", "Results", "analyze", "collect", "document_report", "failure_diagnostic",
           "for_client",
           "prompt_diagnostics", "publish", "publish_params", "pull", "to_lsp", "update"]
