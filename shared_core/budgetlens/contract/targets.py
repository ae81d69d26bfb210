"""The target matrix: every ``call_model`` step of a pipeline against every target model.

Each target is checked like the pipeline's own model, with the target's registry window,
output ceiling and tokenizer (``CheckOptions.target``): the system prompt and template are
counted again with the target's tokenizer family (approximately, ``≈``, for a family without
an exact offline tokenizer). A step fits a target when its total is within the target's
window and its output within the target's output ceiling.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from budgetlens import codes
from budgetlens.contract.cache import BudgetCache, RecordingFiles
from budgetlens.contract.check import check_pipeline
from budgetlens.contract.discovery import pipeline_config
from budgetlens.contract.limits import unknown_model_message
from budgetlens.contract.results import CheckOptions, PipelineReport, StepBudget
from budgetlens.files import FileSource
from budgetlens.models.registry import load_registry
from budgetlens.source import Diagnostic, Location, Range, Severity


@dataclass(frozen=True)
class TargetFit:
    """One step against one target model."""

    target: str
    step: str
    index: int = field(metadata={"json": False})  # index into ``PipelineReport.steps``
    fits: bool
    total: int
    window: int
    headroom: int  # window - total (negative when over)
    output: int
    ceiling: int | None
    tokenizer: str
    approximate: bool
    """The counts are approximate (``≈``): the target's tokenizer is not available offline."""

    @property
    def over(self) -> int:
        """Tokens over the window (0 when within it)."""
        return max(0, -self.headroom)

    @property
    def verdict(self) -> str:
        """``gpt-4o ✓``, ``llama-3.1-8b-instruct ✗ (412 over)``, ``≈`` for approximate."""
        mark = "≈" if self.approximate else ""
        if self.fits:
            return f"{self.target} {mark}✓"
        return f"{self.target} {mark}✗ ({self.why_short})"

    @property
    def why_short(self) -> str:
        """Why the step does not fit: ``412 over``, ``output 20,000 > 16,384``."""
        mark = "≈" if self.approximate else ""
        if self.over:
            return f"{mark}{self.over:,} over"
        if self.ceiling is not None and self.output > self.ceiling:
            return f"output {self.output:,} > {self.ceiling:,}"
        return "no output limit"


@dataclass(frozen=True)
class TargetMatrix:
    """The matrix of one pipeline: one ``TargetFit`` per step and target, step by step."""

    pipeline: str
    targets: tuple[str, ...]
    fits: tuple[TargetFit, ...]
    diagnostics: tuple[Diagnostic, ...] = field(default=(), metadata={"json": False})

    def for_step(self, index: int) -> list[TargetFit]:
        return [f for f in self.fits if f.index == index]

    def lens(self, index: int) -> str:
        """``fits: gpt-4o ✓ · llama-3.1-8b-instruct ✗ (412 over)`` for the step at ``index``."""
        return "fits: " + " · ".join(f.verdict for f in self.for_step(index))

    def hover(self, index: int) -> str:
        """A Markdown table of the step's sums per target."""
        rows = ["| target | window | total | headroom | output / ceiling | tokenizer |",
                "|---|---:|---:|---:|---:|---|"]
        for f in self.for_step(index):
            approx = "≈" if f.approximate else ""
            ceiling = f"{f.ceiling:,}" if f.ceiling else "-"
            rows.append(f"| {f.target} {'✓' if f.fits else '✗'} | {f.window:,} |"
                        f" {approx}{f.total:,} | {approx}{f.headroom:,} |"
                        f" {f.output:,} / {ceiling} | {f.tokenizer}"
                        f"{' (approximate)' if f.approximate else ''} |")
        return "\n".join(rows)


def config_targets(pipeline: str, files: FileSource, options: CheckOptions,
                   cache: BudgetCache) -> tuple[list[str], Location | None]:
    """config.json's ``targets`` of a pipeline, and where the list is."""
    config, _ = pipeline_config(pipeline, RecordingFiles(files), options, cache)
    cfg = config.config if config is not None else None
    if config is None or cfg is None or not cfg.targets:
        return [], None
    return list(cfg.targets), config.location("targets")


def _fit(target: str, step: StepBudget, report: PipelineReport) -> TargetFit:
    ceiling = report.output_ceiling.value if report.output_ceiling else None
    within = ceiling is None or step.output.value <= ceiling
    return TargetFit(target=target, step=step.step, index=0, fits=step.headroom >= 0 and within
                     and step.output.value > 0, total=step.total, window=step.window.value,
                     headroom=step.headroom, output=step.output.value, ceiling=ceiling,
                     tokenizer=report.tokenizer or "", approximate=report.approximate)


def _misfit(fit: TargetFit, where: Location, pipeline: str) -> Diagnostic:
    approx = "≈" if fit.approximate else ""
    why = (f"total {approx}{fit.total:,} > window {fit.window:,} ({fit.why_short})"
           if fit.over else fit.why_short.replace(" > ", " > the target's output ceiling "))
    return Diagnostic(where.file, where.range, Severity.WARNING, codes.TARGET_DOES_NOT_FIT,
                      f"step {fit.step!r} does not fit target {fit.target}: {why}"
                      + (f" (counted approximately with {fit.tokenizer})"
                         if fit.approximate else ""), pipeline, fit.step)


def target_matrix(path: Path | str, targets: Sequence[str] | None = None, *,
                  files: FileSource, options: CheckOptions | None = None,
                  cache: BudgetCache | None = None) -> TargetMatrix:
    """Every ``call_model`` step of the pipeline at ``path`` against every target
    (``targets``, else config.json's ``targets``). An unknown target is a BL061 warning
    (at config.json's ``targets`` when it comes from there) and is left out."""
    options = options or CheckOptions()
    cache = cache if cache is not None else BudgetCache()
    pipe = os.path.normpath(str(path))
    where: Location | None = None
    if targets is None:
        found, where = config_targets(pipe, files, options, cache)
        targets = found
    diagnostics: list[Diagnostic] = []
    fits: list[TargetFit] = []
    known: list[str] = []
    for target in targets:  # the registry is read once, on first use: no target needs none
        info = load_registry().get(target)
        if info is None:
            loc = where or Location(pipe, Range.at(0, 0))
            diagnostics.append(Diagnostic(loc.file, loc.range, Severity.WARNING,
                                          codes.MODEL_UNKNOWN,
                                          unknown_model_message(target, "target"), pipe))
            continue
        known.append(info.name)
        report = check_pipeline(pipe, files=files, cache=cache,
                                options=replace(options, target=info.name))
        for index, step in enumerate(report.steps):
            fit = replace(_fit(info.name, step, report), index=index)
            fits.append(fit)
            if not fit.fits:
                diagnostics.append(_misfit(fit, step.name_location or step.location, pipe))
    fits.sort(key=lambda f: f.index)  # stable: targets keep their order within a step
    return TargetMatrix(pipe, tuple(known), tuple(fits), tuple(diagnostics))
