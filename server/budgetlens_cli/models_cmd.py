"""``budgetlens models [QUERY] [--doctor] [--format text|json] [--config FILE]``: the model
registry as checks see it (the bundled one with corrections.json applied, the user's and
the workspace's models.json over it), and its doctor.

The workspace's models.json is the one next to the config.json at or above the current
folder (or named by its ``models_file``); ``--config`` names another config.json.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from dataclasses import dataclass
from typing import Any

from budgetlens.contract.config import find_config, read_config
from budgetlens.contract.models_file import (
    ModelsFile,
    overlay,
    read_models_file,
    user_models_path,
    workspace_models_path,
)
from budgetlens.files import DiskFiles
from budgetlens.models.checks import RULES
from budgetlens.models.doctor import Finding, Status, doctor
from budgetlens.models.registry import ModelInfo, Registry, load_registry
from budgetlens.models.resolution import search
from budgetlens.serialize import to_jsonable
from budgetlens.source import Diagnostic
from budgetlens_cli.main import EXIT_FINDINGS, EXIT_OK, UsageError


def register(sub: Any) -> None:
    p: argparse.ArgumentParser = sub.add_parser(
        "models", help="list the model registry's models, or check it (--doctor)",
        description="List the models checks know: window, input and output limits, how"
                    " counts are made (exact, or ≈ approximate), source and date. The"
                    " registry is the bundled one with its corrections, and models.json"
                    " files over it: the user's ($XDG_CONFIG_HOME/budgetlens/models.json)"
                    " and the workspace's (next to the config.json at or above the current"
                    " folder). QUERY keeps the names that contain it (case and punctuation"
                    " ignored), else the closest ones; an Ollama tag or a provider prefix"
                    " finds its model.")
    p.add_argument("query", nargs="?", metavar="QUERY", help="a name or part of one")
    p.add_argument("--doctor", action="store_true",
                   help="check every entry (output not below the window, input + output"
                        " above it, sources disagreeing); exit 1 on a finding that is"
                        " neither fixed nor justified")
    p.add_argument("--format", choices=("text", "json"), default="text")
    p.add_argument("--config", metavar="FILE",
                   help="the config.json whose models.json to read (default: the one at"
                        " or above the current folder)")
    p.set_defaults(run=run)


@dataclass(frozen=True)
class ModelRow:
    """One model of the listing (``--format json``)."""

    name: str
    provider: str
    window: int
    max_input: int | None
    max_output: int | None
    tokenizer: str
    counting: str
    exact: bool
    source: str
    date: str
    set_by: dict[str, str]
    """The fields a models.json set, each with where (``models.json:3:26``)."""


def _row(info: ModelInfo) -> ModelRow:
    set_by = {k: _place(loc.file, loc.range.start.line, loc.range.start.character)
              for k, loc in info.origins}
    return ModelRow(info.name, info.provider, info.window, info.max_input, info.max_output,
                    info.tokenizer, info.counting, info.exact, info.source, info.date, set_by)


def _place(path: str, line: int, character: int) -> str:
    return f"{path}:{line + 1}:{character + 1}"


def _safe(text: str) -> str:
    """``text`` with control characters escaped (names and sources may come from a
    models.json: a terminal must not read them as commands)."""
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)


def _config_path(args: argparse.Namespace) -> str | None:
    if args.config:
        if not os.path.isfile(args.config):
            raise UsageError(f"--config {args.config}: no such file")
        return str(args.config)
    found, _ = find_config(".", DiskFiles())
    return found.path if found is not None else None


def _models_files(args: argparse.Namespace) -> list[ModelsFile]:
    paths = [user_models_path(os.environ)]
    config = _config_path(args)
    if config is not None:
        loaded = read_config(config, DiskFiles())
        extra = loaded.config.model_extra if loaded.config is not None else {}
        named = (extra or {}).get("models_file")
        paths.append(workspace_models_path(config, named if isinstance(named, str) and
                                           named.strip() else None))
    files = [read_models_file(p, DiskFiles()) for p in paths if p]
    return [f for f in files if f is not None]


def _registry(args: argparse.Namespace) -> tuple[Registry, list[Diagnostic]]:
    files = _models_files(args)
    registry, problems = overlay(load_registry(), files)
    return registry, [d for f in files for d in f.diagnostics] + list(problems)


def _print_problems(problems: list[Diagnostic]) -> None:
    for d in problems:
        pos = d.range.start
        print(_safe(f"{_place(d.file, pos.line, pos.character)}: {d.severity.value}"
                    f" {d.code}: {d.message}"), file=sys.stderr)


def run(args: argparse.Namespace) -> int:
    registry, problems = _registry(args)
    _print_problems(problems)
    if args.doctor:
        return _doctor(registry, args.format)
    names = search(args.query, registry.models, registry.folded) if args.query \
        else sorted(registry.models)
    rows = [_row(registry.models[n]) for n in names]
    if args.format == "json":
        print(json.dumps(to_jsonable({"date": registry.date, "models": rows}), indent=2,
                         ensure_ascii=False))
        return EXIT_OK
    if not rows:
        print(f"no model matches {_safe(args.query)!r} (registry {registry.date});"
              " `budgetlens models` lists them all")
        return EXIT_FINDINGS
    _print_table(rows, registry)
    return EXIT_OK


def _number(value: int | None) -> str:
    return f"{value:,}" if value is not None else "-"


def _source(row: ModelRow) -> str:
    first = row.source.split("; ")[0]
    if row.set_by:
        first = ", ".join(f"{k} {os.path.basename(v)}" for k, v in row.set_by.items()) + \
            f" · {first}"
    return first + (" (corrected)" if "corrections.json" in row.source else "")


def _print_table(rows: list[ModelRow], registry: Registry) -> None:
    head = ("model", "provider", "window", "max input", "max output", "tokenizer", "date",
            "source")
    cells: list[tuple[str, ...]] = [
        tuple(_safe(c) for c in (r.name, r.provider, _number(r.window), _number(r.max_input),
                                 _number(r.max_output), r.counting, r.date, _source(r)))
        for r in rows]
    widths = [max(len(h), *(len(c[i]) for c in cells)) for i, h in enumerate(head)]
    right = {2, 3, 4}

    def line(values: tuple[str, ...]) -> str:
        return "  ".join(v.rjust(w) if i in right else v.ljust(w)
                         for i, (v, w) in enumerate(zip(values, widths, strict=True))).rstrip()

    print(f"model registry {registry.date}: {len(rows)} of {len(registry.models)} models"
          " (≈ approximate counts; - not published)")
    print(line(head))
    for row in cells:
        print(line(row))


def _doctor(registry: Registry, fmt: str) -> int:
    found = doctor(registry)
    bad = [f for f in found if f.status is Status.UNJUSTIFIED]
    if fmt == "json":
        print(json.dumps(to_jsonable({
            "date": registry.date, "rules": RULES, "findings": list(found),
            "disagreements_recorded": registry.disagreements is not None,
            "unjustified": len(bad)}), indent=2, ensure_ascii=False))
        return EXIT_FINDINGS if bad else EXIT_OK
    for line in _doctor_lines(registry, found, bad):
        print(_safe(line))
    return EXIT_FINDINGS if bad else EXIT_OK


def _doctor_lines(registry: Registry, found: tuple[Finding, ...],
                  bad: list[Finding]) -> list[str]:
    counts = {s: sum(f.status is s for f in found) for s in Status}
    lines = [f"model registry {registry.date}: {len(registry.models)} models;"
             f" {counts[Status.FIXED]} findings fixed by corrections.json,"
             f" {counts[Status.JUSTIFIED]} justified, {counts[Status.UNJUSTIFIED]}"
             " unjustified"]
    for f in bad:
        lines.append(f"  ✗ {f.model}: {f.check}: {f.message} ({f.where})")
    for f in found:
        if f.status is Status.JUSTIFIED:
            lines.append(f"  ✓ {f.model}: {f.check}: {f.message}; justified: {f.reason}")
    fixed: dict[str, list[str]] = {}
    reasons: dict[str, str] = {}
    for f in found:
        if f.status is Status.FIXED:
            fixed.setdefault(f.check, []).append(f.model)
            reasons[f.check] = f.reason
    for check, models in fixed.items():
        lines.append(f"  ✓ {check}: {len(models)} entries fixed ({reasons[check]}):"
                     f" {', '.join(models)}")
    if registry.disagreements is None:
        lines.append("  sources-disagree: not recorded in this snapshot (the refresh"
                     " script records them from its next run)")
    return lines
