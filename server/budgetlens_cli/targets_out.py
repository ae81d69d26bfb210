"""``budgetlens check --target MODEL``: the target matrix of each pipeline in the output.

Every ``call_model`` step is checked against every target model (``--target``, repeatable;
else config.json's ``targets``) with the target's window, output ceiling and tokenizer. A
step that does not fit a target is a BL063 warning (so SARIF and the CI formats carry it);
text output adds a table per pipeline, JSON a ``targets`` list, SARIF the matrix as the
run's ``properties.targets``.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import Any, TextIO

from budgetlens import BudgetCache, CheckOptions, DiskFiles, PipelineReport
from budgetlens.contract.limits import unknown_model_message
from budgetlens.contract.model import StepBudget
from budgetlens.contract.report_text import display_width
from budgetlens.contract.targets import TargetFit, TargetMatrix, target_matrix
from budgetlens.models import load_registry
from budgetlens.serialize import to_jsonable
from budgetlens.source import Diagnostic
from budgetlens_cli.main import UsageError


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--target", action="append", metavar="MODEL", dest="targets",
                   help="also check every step against this registry model (repeatable;"
                        " default: config.json's targets)")


def validate(args: argparse.Namespace) -> list[str] | None:
    """The --target names as the registry spells them; a name it does not know is bad
    usage (with a suggestion)."""
    names: list[str] | None = getattr(args, "targets", None)
    if not names:
        return None
    registry = load_registry()
    out = []
    for name in names:
        info = registry.get(name)
        if info is None:
            raise UsageError(f"--target: {unknown_model_message(name)}")
        out.append(info.name)
    return out


def matrices(reports: Sequence[PipelineReport], targets: list[str] | None,
             options: CheckOptions) -> list[TargetMatrix]:
    """The matrix of each pipeline that has targets (from --target or its config.json)."""
    files, cache = DiskFiles(), BudgetCache()
    found = (target_matrix(r.pipeline, targets, files=files, options=options, cache=cache)
             for r in reports)
    return [m for m in found if m.targets or m.diagnostics]


def diagnostics(found: Sequence[TargetMatrix]) -> list[Diagnostic]:
    return [d for m in found for d in m.diagnostics]


def attach(document: Any, fmt: str, found: Sequence[TargetMatrix]) -> None:
    """Put the matrices into a JSON (``targets``) or SARIF (the run's
    ``properties.targets``) document; other formats and no targets: nothing."""
    if not found or fmt not in ("json", "sarif"):
        return
    data = to_jsonable(list(found))
    if fmt == "json":
        document["targets"] = data
    else:
        document["runs"][0].setdefault("properties", {})["targets"] = data


def term_origin(term: dict[str, Any]) -> str:
    """`` from model gpt-4o (registry 2026-11-23)`` for a term the registry or the server
    set (the place alone does not say it); empty for the others."""
    source = str(term.get("source", ""))
    return f" from {source}" if source.startswith(("model ", "config.json serving.")) else ""


def model_note(report: PipelineReport) -> str:
    """``, model gpt-4o`` (``≈`` counts approximate) for a pipeline that names a model."""
    if report.model is None:
        return ""
    return f", model {report.model}" + (" (≈ approximate counts)" if report.approximate
                                         else "")


def step_model_json(step: StepBudget) -> dict[str, Any]:
    """``model`` (a step's own) and ``approximate: true`` for a step's JSON, when they
    apply (absent otherwise, so the output without models is unchanged)."""
    out: dict[str, Any] = {}
    if step.model is not None:
        out["model"] = step.model
    if step.approximate:
        out["approximate"] = True
    return out


def _cell(fit: TargetFit) -> str:
    mark = "≈" if fit.approximate else ""
    if fit.fits:
        return f"✓ {mark}{fit.total:,} / {fit.window:,}"
    return f"✗ {fit.why_short}"


def write_text(out: TextIO, found: Sequence[TargetMatrix]) -> None:
    """One table per pipeline: a row per step, a column per target."""
    for m in found:
        if not m.fits:
            continue
        out.write(f"{m.pipeline}: targets (✓ fits: total / window; ≈ approximate count)\n")
        steps = sorted({f.index: f.step for f in m.fits}.items())
        rows = [["step", *m.targets]]
        for index, name in steps:
            by_target = {f.target: f for f in m.for_step(index)}
            rows.append([name, *(_cell(by_target[t]) for t in m.targets)])
        widths = [max(display_width(r[c]) for r in rows) for c in range(len(rows[0]))]
        for r in rows:
            cells = [c + " " * (w - display_width(c)) for c, w in zip(r, widths, strict=True)]
            out.write("  " + "  ".join(cells).rstrip() + "\n")
        for target in m.targets:  # what each target was checked with
            fit = next(f for f in m.fits if f.target == target)
            ceiling = f"{fit.ceiling:,}" if fit.ceiling else "none published"
            kind = "approximate ≈" if fit.approximate else "exact"
            out.write(f"  {target}: window {fit.window:,} · output ceiling {ceiling}"
                      f" · tokenizer {fit.tokenizer} ({kind})\n")
        out.write("\n")
