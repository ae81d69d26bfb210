"""The budget table of a pipeline report as text: one row per ``call_model`` step.

Both adapters show it (the CLI after its diagnostics, the language server in its budget
report), so it lives below them.
"""

from __future__ import annotations

import unicodedata
from typing import TYPE_CHECKING, Any

from budgetlens.contract import escape
from budgetlens.contract.enums import (
    OutputSource,
)

if TYPE_CHECKING:  # (the CLI prints a cached result's diagnostics without loading the models)
    from budgetlens.contract.results import PipelineReport


def display_width(text: str) -> int:
    """Columns ``text`` takes in a terminal (East Asian wide and full-width characters: 2)."""
    if text.isascii():
        return len(text)
    return sum(2 if unicodedata.east_asian_width(ch) in "WF" else 1 for ch in text)


COLUMNS = ("fixed", "history", "context", "output", "margin", "total", "window", "headroom")


#: The heads of ``COLUMNS``, each right-aligned in 10 columns as its numbers are.
_HEADS = "".join(f"{c:>10}" for c in COLUMNS)


def _header(width: int) -> str:
    return "  " + "step".ljust(width) + _HEADS + "  fits"


def _approximate_notes(report: PipelineReport) -> list[str]:
    """One line per model whose counts are approximate (a ``≈`` in its steps' rows): why,
    and the ``pip install`` that makes them exact when there is one."""
    from budgetlens.models.registry import load_registry  # start-up speed: only when ≈

    names = dict.fromkeys(s.model or report.model for s in report.steps if s.approximate)
    out = []
    for name in names:
        info = load_registry().get(name) if name else None
        why = info.approximate_why if info is not None else None
        out.append(f"  ≈ approximate counts ({name}: {why})" if name and why else
                   "  ≈ approximate counts")
    return out


def budget_table(report: PipelineReport) -> list[str]:
    if not report.steps:
        return []
    # a step id comes from the pipeline: shown on one line, its control characters escaped
    names = [escape.text(s.step) for s in report.steps]
    widths = [display_width(name) for name in names]
    width = max(4, *widths)
    rows = [_header(width)]
    for s, shown, shown_width in zip(report.steps, names, widths, strict=True):
        name = shown + " " * (width - shown_width)
        fits = "  yes" if s.fits else "  NO"
        if not (s.approximate or s.window.missing or s.context.missing
                or s.output_source is OutputSource.MISSING):
            # every number known (nearly every step of a run): the columns of ``COLUMNS``
            rows.append(f"  {name}{s.fixed.value:>10}{s.history.value:>10}"
                        f"{s.context.value:>10}{s.output.value:>10}{s.margin.value:>10}"
                        f"{s.total:>10}{s.window.value:>10}{s.headroom:>10}{fits}")
            continue
        # the numbers of ``s.numbers``, read directly
        b: dict[str, Any] = {"fixed": s.fixed.value, "history": s.history.value,
                             "context": s.context.value, "output": s.output.value,
                             "margin": s.margin.value, "total": s.total,
                             "window": s.window.value, "headroom": s.headroom}
        # a missing term (an invalid or absent setting, reported above) is unknown, and so
        # are the total and the headroom: never a number next to NO that looks fine
        unknown = {"window": s.window.missing, "context": s.context.missing,
                   "output": s.output_source is OutputSource.MISSING}
        for column, missing in unknown.items():
            if missing:
                b[column] = b["total"] = b["headroom"] = "?"
        if s.approximate:  # the counted terms (and what follows from them) are estimates
            for column in ("fixed", "total", "headroom"):
                b[column] = f"≈{b[column]}" if b[column] != "?" else "?"
        rows.append("  " + name + "".join(f"{b[c]:>10}" for c in COLUMNS) + fits)
    if any(s.approximate for s in report.steps):
        rows += _approximate_notes(report)
    rows += _own_window_notes(report)
    return rows + _term_notes(report, names)


def _own_window_notes(report: PipelineReport) -> list[str]:
    """``  router: window 8,192 from pipeline steps[0].serving.num_ctx (...)`` for each step
    whose window a serving block or a variant set (a step's own model alone is shown by
    the registry's window; the pipeline's window heads the table)."""
    return [f"  {escape.text(s.step)}: window {s.window.value:,} from"
            f" {escape.text(s.window.source)}"
            for s in report.steps
            if s.own_window and not s.window.source.startswith("model ")
            and (report.window is None or s.window != report.window)]


def _term_notes(report: PipelineReport, names: list[str]) -> list[str]:
    """One line per step with request terms (contract/terms.py): what its fixed part
    holds besides the prompts, its thinking budget and its model's input limit."""
    out = []
    for s, name in zip(report.steps, names, strict=True):
        if s.tools is None and s.response_schema is None and s.reasoning is None:
            continue  # no request term, no thinking budget (nearly every step): no line
        parts = [f"{label} {t.value:,} ({escape.text(t.source)})"
                 for label, t in s.request_terms()]
        if s.reasoning is not None:
            where = "inside the output" if s.reasoning_in_output else "added to the total"
            parts.append(f"reasoning {s.reasoning.value:,} {where}"
                         f" ({escape.text(s.reasoning.source.removeprefix('reasoning: '))})")
        if s.max_input is not None and parts:
            parts.append(f"input {s.input_tokens:,} of max_input {s.max_input.value:,}")
        if parts:
            out.append(f"  {name}: " + "; ".join(parts))
    return out
