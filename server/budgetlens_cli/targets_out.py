"""``budgetlens check --target MODEL``: the target matrix of each pipeline in the output.

Imported when a pipeline is checked, not for a result from the cache (start-up speed). Every
``call_model`` step is checked against every target model (``--target``, repeatable;
else config.json's ``targets``) with the target's window, output ceiling and tokenizer. A
step that does not fit a target is a BL063 warning (so SARIF and the CI formats carry it);
text output adds a table per pipeline, JSON a ``targets`` list, SARIF the matrix as the
run's ``properties.targets``.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path
from typing import TextIO

from budgetlens.contract import escape
from budgetlens.contract.cache import BudgetCache
from budgetlens.contract.limits import unknown_model_message
from budgetlens.contract.report_text import display_width
from budgetlens.contract.results import CheckOptions
from budgetlens.contract.targets import TargetFit, TargetMatrix, target_matrix
from budgetlens.files import FileSource
from budgetlens.models import load_registry
from budgetlens.models.resolution import query_of
from budgetlens_cli.main import UsageError


def validate(args: argparse.Namespace) -> list[str] | None:
    """The --target names as the registry spells them; a name it does not know is bad
    usage (with a suggestion, and the ``budgetlens models QUERY`` that finds names)."""
    names: list[str] | None = getattr(args, "targets", None)
    if not names:
        return None
    registry = load_registry()
    out = []
    for name in names:
        info = registry.get(name)
        if info is None:
            message = unknown_model_message(name, registry=registry)
            if "`budgetlens models" not in message:  # a suggestion: also how to look
                message += f" (`budgetlens models {query_of(name)}` finds names)"
            raise UsageError(f"--target: {message}")
        out.append(info.name)
    return out


def matrix(path: Path, targets: list[str] | None, files: FileSource, options: CheckOptions,
           cache: BudgetCache) -> TargetMatrix | None:
    """The matrix of a pipeline that has targets (from --target or its config.json)."""
    found = target_matrix(path, targets, files=files, options=options, cache=cache)
    return found if found.targets or found.diagnostics else None


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
        out.write(f"{escape.text(m.pipeline)}: targets (✓ fits: total / window;"
                  " ≈ approximate count)\n")
        steps = sorted({f.index: f.step for f in m.fits}.items())
        rows = [["step", *m.targets]]
        for index, name in steps:
            by_target = {f.target: f for f in m.for_step(index)}
            rows.append([escape.text(name), *(escape.text(_cell(by_target[t]))
                                              for t in m.targets)])
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
