"""The machine-readable outputs of ``budgetlens check``, and the choice of output format.

``write_output`` prints a run's results in ``--format``. ``text`` is
:mod:`budgetlens_cli.check_text`'s. ``json`` is one object: ``version``, ``diagnostics``,
``steps`` (each step's budget and terms) and ``targets`` when pipelines have targets.
``sarif`` is SARIF 2.1.0 (the project's ``informationUri``, each rule's ``helpUri`` in
docs/diagnostics.md, a ``partialFingerprints`` hash per result), a term of a budget a related
location. ``github``, ``gitlab`` and
``junit`` are :mod:`budgetlens_cli.ci_formats`'s. Every format is built from the same
``PipelineResult``s and diagnostics.
"""

from __future__ import annotations

import argparse
import json
import os
from collections.abc import Sequence
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, TextIO

from budgetlens import __version__, codes
from budgetlens.contract import escape
from budgetlens.serialize import RawJSON, dumps, to_jsonable
from budgetlens.source import Diagnostic, Range, Severity
from budgetlens_cli import ci_formats, lint_options
from budgetlens_cli.check_text import write_text

if TYPE_CHECKING:
    from budgetlens.contract.results import PipelineReport, StepBudget
    from budgetlens.contract.targets import TargetMatrix
    from budgetlens_cli.check_result import PipelineResult

JSON_SCHEMA_VERSION = 1
SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"


def write_output(out: TextIO, args: argparse.Namespace, results: list[PipelineResult],
                 diagnostics: list[Diagnostic]) -> None:
    """Print the result in ``args.format`` (nothing with ``--silent``, the count per code
    with ``--statistics``)."""
    if getattr(args, "silent", False):
        return
    if getattr(args, "statistics", False):
        out.write(lint_options.statistics_text(diagnostics, args.format))
        return
    matrices = [r.matrix for r in results if r.matrix is not None]
    if args.format == "text":
        quiet = getattr(args, "quiet", False)
        write_text(out, results, diagnostics, tables=not (args.no_table or quiet),
                   matrices=() if quiet else matrices, quiet=quiet,
                   colour=lint_options.colour_wanted(args, out, os.environ))
    elif args.format == "github":
        out.write(ci_formats.github_output(diagnostics))
    elif args.format == "junit":
        out.write(junit_text(args, results, diagnostics))
    elif args.format == "json":  # (the names of non-UTF-8 files as escape.json_text shows)
        out.write(escape.json_text(json_text(results, diagnostics, matrices)) + "\n")
    else:
        document = json_document(args.format, diagnostics, matrices)
        out.write(escape.json_text(dumps(document)) + "\n")


def junit_text(args: argparse.Namespace, results: list[PipelineResult],
               diagnostics: list[Diagnostic]) -> str:
    """``--format junit``: each pipeline's suite from the diagnostics shown (selection and
    suppressions applied; a BL080 in the pipeline file goes to its ``(file)`` case), failing
    at ``--fail-on``'s level."""
    shown = {_key(d) for d in diagnostics}
    unused = [d for d in diagnostics if d.code == codes.UNUSED_SUPPRESSION]
    suites = []
    for r in results:
        own = [d for d in r.diagnostics if _key(d) in shown]
        hidden = [d.step for d in r.diagnostics if _key(d) not in shown
                  and d.code in (codes.CONTRACT_VIOLATION, codes.CANNOT_FIT)]
        own += [d for d in unused if d.file == r.pipeline]
        suites.append((ci_formats.junit_suite_of(r.pipeline, r.fragments["junit"], own,
                                                 lint_options.fail_level(args), hidden),
                       r.steps + 1))
    return ci_formats.junit_document(suites)


def _key(d: Diagnostic) -> tuple[str, Range, str, str]:
    return d.file, d.range, d.code, d.message


def json_document(fmt: str, diagnostics: list[Diagnostic],
                  matrices: Sequence[TargetMatrix] = ()) -> Any:
    """The document of ``sarif`` or ``gitlab`` as plain data (the target matrices in SARIF's
    run properties)."""
    if fmt == "gitlab":
        return ci_formats.gitlab_output(diagnostics)
    document = sarif_output(diagnostics)
    if matrices:  # the matrix as the run's properties
        document["runs"][0].setdefault("properties", {})["targets"] = to_jsonable(
            list(matrices))
    return document


# ---------------------------------------------------------------------------- JSON
def json_output(results: list[PipelineResult], diagnostics: list[Diagnostic],
                matrices: Sequence[TargetMatrix] = ()) -> dict[str, Any]:
    """``--format json`` as plain data: the diagnostics, every step of the pipelines and the
    target matrices (``targets``) if any. ``json_text`` prints it."""
    document: dict[str, Any] = {
        "version": JSON_SCHEMA_VERSION,
        "diagnostics": [_diagnostic_json(d) for d in diagnostics],
        "steps": [json.loads(text) for r in results for text in r.fragments["steps"]]}
    if matrices:
        document["targets"] = to_jsonable(list(matrices))
    return document


def json_text(results: list[PipelineResult], diagnostics: list[Diagnostic],
              matrices: Sequence[TargetMatrix] = ()) -> str:
    """``json.dumps(json_output(...), indent=2, ensure_ascii=False)``, the same bytes, with
    the steps taken as each result keeps them: rendered once, when the pipeline was checked
    (``check_run.pipeline_result``), and placed by ``serialize.dumps`` as :class:`RawJSON`.

    A speed trick, measured (docs/performance.md): ``json.dumps`` with ``indent`` runs in
    pure Python. On 1,000 pipelines answered by the result cache, encoding the steps again
    took the run from 0.25 s to 0.64 s of CPU. tests/cli/test_targets.py checks the two give
    the same bytes."""
    document: dict[str, Any] = {
        "version": JSON_SCHEMA_VERSION,
        "diagnostics": [_diagnostic_json(d) for d in diagnostics],
        "steps": [RawJSON(text) for r in results for text in r.fragments["steps"]]}
    if matrices:
        document["targets"] = to_jsonable(list(matrices))
    return dumps(document)


def _diagnostic_json(d: Diagnostic) -> dict[str, Any]:
    """A diagnostic with its related places (for a violation: where each term comes from)."""
    out: dict[str, Any] = to_jsonable(d)
    out["related"] = [{"message": r.message, "location": to_jsonable(r.location)}
                      for r in d.related]
    return out


def step_json(report: PipelineReport, index: int) -> dict[str, Any]:
    """A step of the JSON output: its budget, each term's value and provenance, and
    ``injection`` when the pipeline has a policy."""
    step = report.steps[index]
    out: dict[str, Any] = to_jsonable(step.summary)
    out["terms"] = {label: to_jsonable(term) for label, term in step.terms().items()}
    out.update(step_model_json(step))  # a step's own model, approximate counts
    split = report.injection.step(index) if report.injection else None
    if split is not None:
        out["injection"] = to_jsonable(split)
    return out


# ---------------------------------------------------------------------------- SARIF
_SARIF_LEVEL = MappingProxyType({Severity.ERROR: "error", Severity.WARNING: "warning",
                                 Severity.INFORMATION: "note", Severity.HINT: "note"})


def _sarif_rule(code: str) -> dict[str, Any]:
    """A rule with its help inline and ``helpUri``, the absolute address of its section of
    docs/diagnostics.md on the repository's site (``rules.help_uri``)."""
    info = codes.CODES[code]
    help_text = codes.HELP.get(code, info.summary)
    full = f"{info.summary}. {help_text}" if code in codes.HELP else info.summary
    rule: dict[str, Any] = {"id": code, "shortDescription": {"text": info.summary},
                            "fullDescription": {"text": full},
                            "help": {"text": help_text}}
    from budgetlens.rules import help_uri  # lazy, as in sarif_output

    uri = help_uri(code)
    if uri is not None:
        rule["helpUri"] = uri
    rule["defaultConfiguration"] = {"level": _SARIF_LEVEL[info.severity]}
    return rule


def _sarif_location(file: str, rng: Range) -> dict[str, Any]:
    return {"physicalLocation": {
        "artifactLocation": {"uri": Path(file).as_posix()},
        "region": {"startLine": rng.start.line + 1, "startColumn": rng.start.character + 1,
                   "endLine": rng.end.line + 1, "endColumn": rng.end.character + 1}}}


def sarif_output(diagnostics: list[Diagnostic]) -> dict[str, Any]:
    from budgetlens.rules import REPOSITORY_URL  # lazy: start-up speed (SARIF only)

    used = sorted({d.code for d in diagnostics})
    rules = [_sarif_rule(c) for c in used if c in codes.CODES]
    results = []
    # the GitLab fingerprint, stable when lines move or numbers change
    fingerprints = [issue["fingerprint"] for issue in ci_formats.gitlab_output(diagnostics)]
    for d, fingerprint in zip(diagnostics, fingerprints, strict=True):
        result: dict[str, Any] = {
            "ruleId": d.code,
            "level": _SARIF_LEVEL[d.severity],
            "message": {"text": d.message},
            "locations": [_sarif_location(d.file, d.range)],
            "partialFingerprints": {"budgetlens/v1": fingerprint},
            "properties": {"pipeline": d.pipeline, "step": d.step},
        }
        if d.related:
            result["relatedLocations"] = [
                {"id": n, "message": {"text": r.message},
                 **_sarif_location(r.location.file, r.location.range)}
                for n, r in enumerate(d.related, start=1)]
        results.append(result)
    return {"$schema": SARIF_SCHEMA, "version": "2.1.0", "runs": [{
        "tool": {"driver": {"name": "budgetlens", "version": __version__,
                            "informationUri": REPOSITORY_URL, "rules": rules}},
        "columnKind": "unicodeCodePoints",
        "results": results}]}



def step_model_json(step: StepBudget) -> dict[str, Any]:
    """``model`` (a step's own) and ``approximate: true`` for a step's JSON, when they
    apply (absent otherwise, so the output without models is unchanged)."""
    out: dict[str, Any] = {}
    if step.model is not None:
        out["model"] = step.model
    if step.approximate:
        out["approximate"] = True
    if step.gateway_cap is not None:  # the step's gateway cap, with its source (BL067)
        out["gateway_cap"] = to_jsonable(step.gateway_cap)
    return out

