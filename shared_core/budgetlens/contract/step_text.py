"""A step's budget as one line of arithmetic, for the CLI's diagnostics and the editor alike.

``sum_text`` writes ``fixed ... + history ... + context ... + output ... + margin ... =
total``. The terms, their order and the rules for the request terms live here once:

- ``tools`` and ``response_schema`` belong to the fixed part; an estimate is marked ``≈``.
- a thinking budget beside the output limit adds ``+ reasoning N``; one inside it
  (Claude's) adds nothing and is named in parentheses.

The two adapters word a few parts differently (``SumStyle``). A diagnostic's message
spells out the fixed part's terms; a lens or a hover is short.
"""

from __future__ import annotations

from enum import Enum

from budgetlens.contract.results import StepBudget
from budgetlens.contract.terms import approximate


class SumStyle(Enum):
    """How ``sum_text`` words the parts the adapters show differently."""

    MESSAGE = "message"
    """A diagnostic's message: ``fixed 950 (system prompt 800 + template 20 + format
    overhead 32 + tools 98) + ...``; ``(reasoning 2048 inside it)``."""
    LENS = "lens"
    """A code lens or hover: ``fixed 950 (tools 98) + ...``; ``(reasoning 2048 inside)``."""


def sum_text(step: StepBudget, style: SumStyle) -> str:
    """``fixed F + history H + context C + output O + margin M = total`` of ``step``."""
    fixed = f"fixed {step.fixed.value}"
    if style is SumStyle.MESSAGE:
        fixed += (f" (system prompt {step.system_prompt.value} + template"
                  f" {step.template.value} + format overhead {step.format_overhead.value}"
                  f"{_request_part(step, style)})")
    else:
        fixed += _request_part(step, style)
    return (f"{fixed} + history {step.history.value} + context {step.context.value}"
            f" + output {step.output.value}{_reasoning_part(step, style)}"
            f" + margin {step.margin.value} = {step.total}")


def _request_part(step: StepBudget, style: SumStyle) -> str:
    """The request terms: `` + tools 88 + response_schema ≈40`` inside a message's fixed
    part, `` (tools 88, response_schema ≈40)`` after a lens's; empty without them."""
    parts = [f"{name} {'≈' if approximate(term) else ''}{term.value}"
             for name, term in step.request_terms()]
    if style is SumStyle.MESSAGE:
        return "".join(f" + {part}" for part in parts)
    return f" ({', '.join(parts)})" if parts else ""


def _reasoning_part(step: StepBudget, style: SumStyle) -> str:
    """`` + reasoning 4000`` beside the output limit; `` (reasoning 4000 inside it)``
    (a lens: ``inside)``) for a thinking budget inside it (Claude's)."""
    if step.reasoning is None:
        return ""
    if step.reasoning_in_output:
        where = "inside it" if style is SumStyle.MESSAGE else "inside"
        return f" (reasoning {step.reasoning.value} {where})"
    return f" + reasoning {step.reasoning.value}"
