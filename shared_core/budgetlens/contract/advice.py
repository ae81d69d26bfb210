"""The advice in the contract's messages: a step's largest term and what to change, the
message of a step that fits only below the clamp's floors, and the related places."""

from __future__ import annotations

import os

from budgetlens.contract.enums import (
    OutputSource,
)
from budgetlens.contract.results import (
    StepBudget,
    Term,
)
from budgetlens.source import Related


def _floor_advice(kind: str, floor: Term, step: StepBudget) -> tuple[str, int, str]:
    key = f"min_{kind}_tokens"
    if floor.source.startswith("settings."):
        return f"{kind} floor {floor.value} ({key})", floor.value, f"lower {key}"
    if floor.source.startswith("config.json"):
        return (f"{kind} floor {floor.value} (config.json {key})", floor.value,
                f"lower {key} in config.json")
    if kind == "context":
        return (f"context floor {floor.value} ({floor.source})", floor.value,
                f"lower max_context_tokens or set a lower {key}")
    limit = ("model_max_tokens in config.json"
             if step.output_source is OutputSource.MODEL_MAX_TOKENS
             else f"the step's {step.output_source}")
    return (f"output floor {floor.value} ({floor.source})", floor.value,
            f"lower {limit} or set a lower {key}")


def largest_term(step: StepBudget, window: int, context_floor: Term | None = None) -> str:
    """The largest term of a step that cannot fit, its share of the window, and what to
    change: ``history 15000 is 92% of the 16384 window: lower max_history_tokens``."""
    prompt = f" {os.path.basename(step.prompt_file)}" if step.prompt_file else ""
    candidates = [
        (f"system prompt {step.system_prompt.value}", step.system_prompt.value,
         f"shorten the system prompt{prompt}"),
        (f"template {step.template.value}", step.template.value,
         "shorten the step's user_parts.template"),
        (f"format overhead {step.format_overhead.value}", step.format_overhead.value,
         "lower format_overhead_tokens in config.json"),
        (f"history {step.history.value}", step.history.value,
         "lower max_history_tokens (or turn off use_history for this step)"
         if step.history.value else "lower max_history_tokens"),
    ]
    if context_floor is not None:
        candidates.append(_floor_advice("context", context_floor, step))
        if step.output_floor is not None:
            candidates.append(_floor_advice("output", step.output_floor, step))
    candidates.append((f"margin {step.margin.value}", step.margin.value,
                       "lower budget_safety_margin_tokens"))
    label, value, advice = max(candidates, key=lambda c: c[1])  # the first of equals
    percent = (value * 100 + window // 2) // window
    return f"{label} is {percent}% of the {window} window: {advice}"


def unfit_message(label: str, step: StepBudget, window: int, context_floor: Term) -> str:
    """BL052 for a step that fits only below the clamp's floors."""
    out_floor = step.output_floor.value if step.output_floor is not None else 1
    total = (step.fixed.value + step.history.value + context_floor.value + out_floor
             + step.margin.value + step.reasoning_added)
    reasoning = f" + reasoning {step.reasoning_added}" if step.reasoning_added else ""
    return (f"{label} cannot fit the window of {window} tokens even at the clamp's floors:"
            f" fixed {step.fixed.value} + history {step.history.value} + context floor"
            f" {context_floor.value} + output floor {out_floor}{reasoning} + margin"
            f" {step.margin.value} = {total} > {window} (over by {total - window}); no clamp"
            f" is planned for it;"
            f" {largest_term(step, window, context_floor)}")


def floor_related(context_floor: Term, step: StepBudget) -> tuple[Related, ...]:
    floors = [("min_context_tokens", context_floor), ("min_output_tokens", step.output_floor)]
    return tuple(Related(t.location, f"{key}: {t.value}{inherited_suffix(t)}")
                 for key, t in floors if t is not None and t.location is not None)


def inherited_suffix(term: Term) -> str:
    """`` (inherited)`` for a value set in a parent; `` from model gpt-4o (registry ...)``
    for a limit the model registry or the server (``serving``) set."""
    origin = (f" from {term.source}"
              if term.source.startswith(("model ", "config.json serving.")) else "")
    return (" (inherited)" if term.inherited else "") + origin
