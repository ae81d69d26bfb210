"""``budgetlens check PATH... [--format text|json|sarif] [--policy fail_fast|auto_clamp]``.

PATH is a pipeline file or a folder searched for ``pipelines/*.yaml``. Text output reads
like a compiler's (``file:line:col: severity[CODE] message``, the source line and a caret)
followed by a per-step budget table; ``--format json`` prints one object
``{"version": 1, "diagnostics": [...], "steps": [...]}``; ``--format sarif`` prints SARIF
2.1.0. Exit status: 0 without errors, 1 with at least one error, 2 on bad usage.
"""

from __future__ import annotations

import argparse
import json
import sys
import unicodedata
from collections.abc import Iterable
from pathlib import Path
from typing import Any, TextIO

from budgetlens import codes
from budgetlens.cache import BudgetCache
from budgetlens.contract import CheckOptions, PipelineReport, check_pipeline, find_pipelines
from budgetlens.files import DiskFiles, FileSource, SourceError
from budgetlens.policy import Policy
from budgetlens.source import Diagnostic, LineIndex, Severity
from budgetlens.tokens import TokenizerError, get_tokenizer
from budgetlens_lsp import __version__
from budgetlens_lsp.cli.main import EXIT_FINDINGS, EXIT_OK, UsageError

JSON_SCHEMA_VERSION = 1
SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"


def register(sub: Any) -> None:
    p: argparse.ArgumentParser = sub.add_parser(
        "check", help="check pipelines against the token budget contract",
        description="Check every call_model step of the pipelines against the model's"
                    " context window. PATH is a pipeline file or a folder searched for"
                    " pipelines/*.yaml.")
    add_common_arguments(p)
    p.add_argument("--format", choices=("text", "json", "sarif"), default="text",
                   help="output format (default text)")
    p.add_argument("--no-table", action="store_true",
                   help="text format: print the diagnostics only, not the budget tables")
    p.set_defaults(run=run)


def add_common_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("paths", nargs="+", metavar="PATH")
    p.add_argument("--policy", choices=[x.value for x in Policy],
                   help="override the policy (default: the PIPELINE_LIMITS_POLICY environment"
                        " variable, else development in config.json: true = fail_fast)")
    p.add_argument("--tokenizer", help="override the tokenizer of config.json")
    p.add_argument("--config", metavar="FILE", help="use this config.json for every pipeline")


def options_from(args: argparse.Namespace) -> CheckOptions:
    """The check options of the command line; a bad --tokenizer or --config is bad usage."""
    if args.tokenizer is not None:
        try:
            get_tokenizer(args.tokenizer)
        except TokenizerError as exc:
            raise UsageError(f"--tokenizer: {exc}") from None
    if args.config is not None and not Path(args.config).is_file():
        raise UsageError(f"--config {args.config}: no such file")
    return CheckOptions(policy=args.policy, tokenizer=args.tokenizer,
                        config_path=args.config)


def collect_pipelines(paths: Iterable[str]) -> list[Path]:
    """Every pipeline named or found under the PATH arguments; UsageError when none."""
    found: list[Path] = []
    for name in paths:
        path = Path(name)
        if not path.exists() and not path.is_symlink():
            raise UsageError(f"{name}: no such file or folder")
        pipelines = find_pipelines(path)
        if not pipelines:
            raise UsageError(f"{name}: no pipelines/*.yaml found under this folder")
        found.extend(p for p in pipelines if p not in found)
    return found


def check_all(paths: Iterable[str], options: CheckOptions,
              files: FileSource | None = None) -> list[PipelineReport]:
    files = files or DiskFiles()
    cache = BudgetCache()
    return [check_pipeline(p, files=files, options=options, cache=cache)
            for p in collect_pipelines(paths)]


def unique_diagnostics(reports: Iterable[PipelineReport]) -> list[Diagnostic]:
    """Diagnostics of all reports, each once (a parent's problem shows in every child)."""
    seen: set[tuple[Any, ...]] = set()
    out: list[Diagnostic] = []
    for report in reports:
        for d in report.diagnostics:
            key = (d.file, d.range, d.code, d.message)
            if key not in seen:
                seen.add(key)
                out.append(d)
    return out


def run(args: argparse.Namespace) -> int:
    reports = check_all(args.paths, options_from(args))
    diagnostics = unique_diagnostics(reports)
    out = sys.stdout
    if args.format == "json":
        json.dump(json_output(reports, diagnostics), out, indent=2, ensure_ascii=False)
        out.write("\n")
    elif args.format == "sarif":
        json.dump(sarif_output(diagnostics), out, indent=2, ensure_ascii=False)
        out.write("\n")
    else:
        write_text(out, reports, diagnostics, tables=not args.no_table)
    has_error = any(d.severity is Severity.ERROR for d in diagnostics)
    return EXIT_FINDINGS if has_error else EXIT_OK


# ---------------------------------------------------------------------------- JSON
def json_output(reports: list[PipelineReport], diagnostics: list[Diagnostic]) -> dict[str, Any]:
    return {"version": JSON_SCHEMA_VERSION,
            "diagnostics": [d.to_dict() for d in diagnostics],
            "steps": [_step_json(r, i) for r in reports for i in range(len(r.steps))]}


def _step_json(report: PipelineReport, index: int) -> dict[str, Any]:
    """A step of the JSON output; ``injection`` is added when the pipeline has a policy."""
    out = report.steps[index].to_dict()
    split = report.injection.step(index) if report.injection else None
    if split is not None:
        out["injection"] = split.to_dict()
    return out


# ---------------------------------------------------------------------------- SARIF
_SARIF_LEVEL = {Severity.ERROR: "error", Severity.WARNING: "warning",
                Severity.INFORMATION: "note", Severity.HINT: "note"}


def sarif_output(diagnostics: list[Diagnostic]) -> dict[str, Any]:
    used = sorted({d.code for d in diagnostics})
    rules = [{"id": c, "shortDescription": {"text": codes.CODES[c].summary},
              "defaultConfiguration": {"level": _SARIF_LEVEL[codes.CODES[c].severity]},
              "helpUri": f"docs/diagnostics.md#{c.lower()}"}
             for c in used if c in codes.CODES]
    results = []
    for d in diagnostics:
        results.append({
            "ruleId": d.code,
            "level": _SARIF_LEVEL[d.severity],
            "message": {"text": d.message},
            "locations": [{"physicalLocation": {
                "artifactLocation": {"uri": Path(d.file).as_posix()},
                "region": {"startLine": d.range.start.line + 1,
                           "startColumn": d.range.start.character + 1,
                           "endLine": d.range.end.line + 1,
                           "endColumn": d.range.end.character + 1}}}],
            "properties": {"pipeline": d.pipeline, "step": d.step},
        })
    return {"$schema": SARIF_SCHEMA, "version": "2.1.0", "runs": [{
        "tool": {"driver": {"name": "budgetlens", "version": __version__, "rules": rules}},
        "columnKind": "unicodeCodePoints",
        "results": results}]}


# ---------------------------------------------------------------------------- text
def _display_width(text: str) -> int:
    return sum(2 if unicodedata.east_asian_width(ch) in "WF" else 1 for ch in text)


def _pad(prefix: str) -> str:
    """Blanks as wide on screen as ``prefix`` (tabs kept, wide characters doubled)."""
    return "".join("\t" if ch == "\t" else " " * _display_width(ch) for ch in prefix)


class SourceLines:
    """The text of the files diagnostics point into, read once each."""

    def __init__(self, files: FileSource | None = None) -> None:
        self.files = files or DiskFiles()
        self._index: dict[str, LineIndex | None] = {}

    def line(self, file: str, line: int) -> str | None:
        if file not in self._index:
            try:
                self._index[file] = LineIndex(self.files.read_text(Path(file)))
            except (SourceError, OSError):
                self._index[file] = None
        index = self._index[file]
        if index is None or line >= index.line_count:
            return None
        return index.line_text(line)


def format_diagnostic(d: Diagnostic, lines: SourceLines) -> str:
    start, end = d.range.start, d.range.end
    head = f"{d.file}:{start.line + 1}:{start.character + 1}: {d.severity.value}[{d.code}]" \
           f" {d.message}"
    text = lines.line(d.file, start.line)
    if text is None:
        return head + "".join(
            f"\n      = {r.message} at {r.location.file}:{r.location.range.start.line + 1}:"
            f"{r.location.range.start.character + 1}" for r in d.related)
    shown = text
    last = end.character if end.line == start.line else len(text)
    last = max(min(last, len(text)), start.character + 1)
    caret = _pad(shown[:start.character]) + "^" * max(
        1, _display_width(shown[start.character:last]))
    gutter = f"{start.line + 1:>5} | "
    blank = " " * (len(gutter) - 2)
    notes = "".join(
        f"\n{blank}= {r.message} at {r.location.file}:{r.location.range.start.line + 1}:"
        f"{r.location.range.start.character + 1}" for r in d.related)
    return f"{head}\n{gutter}{shown}\n{blank}| {caret}{notes}"


_COLUMNS = ("fixed", "history", "context", "output", "margin", "total", "window", "headroom")


def budget_table(report: PipelineReport) -> list[str]:
    if not report.steps:
        return []
    width = max(4, *(_display_width(s.step) for s in report.steps))
    header = "  " + "step".ljust(width) + "".join(f"{c:>10}" for c in _COLUMNS) + "  fits"
    rows = [header]
    for s in report.steps:
        b = s.budget_dict()
        name = s.step + " " * (width - _display_width(s.step))
        rows.append("  " + name + "".join(f"{b[c]:>10}" for c in _COLUMNS)
                    + ("  yes" if s.fits else "  NO"))
    return rows


def write_text(out: TextIO, reports: list[PipelineReport], diagnostics: list[Diagnostic],
               *, tables: bool = True) -> None:
    lines = SourceLines()
    for d in diagnostics:
        out.write(format_diagnostic(d, lines) + "\n")
    if diagnostics:
        out.write("\n")
    if tables:
        for r in reports:
            if not r.steps:
                continue
            window = r.window.value if r.window else "?"
            out.write(f"{r.pipeline}: window {window}, policy {r.policy.value}"
                      f" ({r.policy_source}), tokenizer {r.tokenizer}\n")
            for row in budget_table(r):
                out.write(row + "\n")
            for split in r.injection.steps if r.injection else ():
                out.write(f"  {split.step}: {split.label}\n")
            out.write("\n")
    errors = sum(d.severity is Severity.ERROR for d in diagnostics)
    warnings = sum(d.severity is Severity.WARNING for d in diagnostics)
    steps = sum(len(r.steps) for r in reports)
    unfit = sum(not s.fits for r in reports for s in r.steps)
    out.write(f"{len(reports)} pipeline{'s' if len(reports) != 1 else ''}, {steps} call_model"
              f" step{'s' if steps != 1 else ''} ({unfit} not fitting):"
              f" {errors} error{'s' if errors != 1 else ''},"
              f" {warnings} warning{'s' if warnings != 1 else ''}\n")

