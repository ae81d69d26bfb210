"""The continuation loop: ask a model for a JSON answer until it is whole.

``continue_json(call_model, prompt)`` follows the loop of DESIGN.md §2 (seed
ai-call-iteration-json-merging, steps 1-6, cases A/B/C):

1. prompt: the original prompt first, then a continuation prompt built from the last cut's
   ``overlap_context`` and ``hierarchy_context_for_prompt`` (``CONTINUATION_TEMPLATE``);
2. call the model (any callable ``prompt -> reply``);
3. merge the reply onto the CUT base (``merge_with_overlap``); no overlap counts as a
   failure and the same prompt is sent again; a reply that restarts the document from the top
   replaces the base;
4. if the merged text parses as it is: finished;
5. else ``get_contexts`` decides: A complete => finished with ``complete_part``;
   B cut but parseable => continue (base = ``hierarchy_context``, fallback = ``complete_part``,
   failures reset); C not parseable => failure, same prompt again;
6. ``max_failures`` (3) consecutive failures => the last valid closed part is returned;
   at most ``max_iterations`` model calls.

Every iteration is recorded in the trace.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum
from typing import Any

from budgetlens.json_contexts import (
    DEFAULT_BUDGET,
    DEFAULT_MARKER,
    DEFAULT_OVERLAP_CHARS,
    JsonContexts,
    get_contexts,
)
from budgetlens.json_merge import MergeResult, merge_with_overlap

CONTINUATION_TEMPLATE = """{prompt}

---
Your previous reply was cut off before the JSON was finished ({description}).
This is the JSON so far: long values are shown as <type hints>, and {marker} marks the cut.

{hierarchy}

Continue the JSON exactly where it was cut. Start your reply by repeating these last \
characters before the cut, verbatim:
{overlap}
then write the rest of the JSON to its end. Reply with JSON text only: no explanation, \
no code fence, and do not start the document again."""
"""Placeholders: {prompt} {description} {marker} {hierarchy} {overlap} {path}; any other
text, braces included, is kept as written."""

DEFAULT_MAX_ITERATIONS = 10
DEFAULT_MAX_FAILURES = 3
LOOP_MIN_OVERLAP = 8
"""The loop asks for ``overlap_context`` (48 characters) back; it accepts an overlap of at
least this many characters (or the whole overlap context when shorter)."""

_PLACEHOLDER = re.compile(r"\{(prompt|description|marker|hierarchy|overlap|path)\}")


class Case(str, Enum):
    """What one iteration decided."""

    PARSED = "parsed"                  # the merged text parsed as it is: finished
    COMPLETE = "complete"              # case A: get_contexts found it complete: finished
    CONTINUE = "continue"              # case B: cut but parseable: continue
    BROKEN = "broken"                  # case C: not parseable: failure, same prompt again
    NO_OVERLAP = "no_overlap"          # the reply did not repeat the end: failure, retry


class Outcome(str, Enum):
    COMPLETE = "complete"                      # a whole JSON value
    FALLBACK_AFTER_FAILURES = "fallback_after_failures"  # last valid closed part
    MAX_ITERATIONS = "max_iterations"          # last valid closed part
    NO_VALID_JSON = "no_valid_json"            # nothing valid was ever received


@dataclass(frozen=True)
class Iteration:
    """One model call: what was sent, what came back, and what was decided."""

    index: int
    prompt: str
    reply: str
    case: Case
    merge: MergeResult | None      # None on the first call and after a restart reset
    parsed: bool                   # the candidate parsed as it is
    contexts: JsonContexts | None  # when get_contexts was consulted
    failures: int                  # consecutive failures after this iteration
    note: str

    def to_dict(self) -> dict[str, Any]:
        return {
            "index": self.index, "prompt": self.prompt, "reply": self.reply,
            "case": self.case.value, "parsed": self.parsed, "failures": self.failures,
            "merge": self.merge.to_dict() if self.merge else None,
            "cut": self.contexts.cut.to_dict() if self.contexts and self.contexts.cut else None,
            "note": self.note,
        }


@dataclass(frozen=True)
class ContinuationResult:
    """The final JSON text (complete, or the last valid closed part) and the trace."""

    text: str
    outcome: Outcome
    iterations: tuple[Iteration, ...]

    @property
    def complete(self) -> bool:
        return self.outcome is Outcome.COMPLETE

    def to_dict(self) -> dict[str, Any]:
        return {"text": self.text, "outcome": self.outcome.value, "complete": self.complete,
                "iterations": [it.to_dict() for it in self.iterations]}


def build_continuation_prompt(prompt: str, contexts: JsonContexts, *,
                              template: str = CONTINUATION_TEMPLATE) -> str:
    """Fill ``template`` from the original prompt and the contexts of the cut reply."""
    values = {
        "prompt": prompt,
        "description": contexts.description,
        "marker": contexts.marker,
        "hierarchy": contexts.hierarchy_context_for_prompt,
        "overlap": contexts.overlap_context,
        "path": contexts.cut.path_text if contexts.cut else "$",
    }
    return _PLACEHOLDER.sub(lambda m: values[m.group(1)], template)


def _parses(text: str) -> bool:
    try:
        json.loads(text)
    except (ValueError, RecursionError):
        return False
    return True


def continue_json(call_model: Callable[[str], str], prompt: str, *,
                  budget: int = DEFAULT_BUDGET, marker: str = DEFAULT_MARKER,
                  overlap_chars: int = DEFAULT_OVERLAP_CHARS,
                  max_iterations: int = DEFAULT_MAX_ITERATIONS,
                  max_failures: int = DEFAULT_MAX_FAILURES,
                  template: str = CONTINUATION_TEMPLATE) -> ContinuationResult:
    """Call ``call_model`` until its JSON answer is whole (see the module docstring)."""
    if max_iterations < 1 or max_failures < 1:
        raise ValueError("max_iterations and max_failures must be >= 1")
    trace: list[Iteration] = []
    base: str | None = None                # the CUT text so far
    fallback: str | None = None            # the last valid CLOSED part
    last: JsonContexts | None = None       # contexts of the base, for the next prompt
    failures = 0
    for index in range(max_iterations):
        sent = prompt if last is None else build_continuation_prompt(
            prompt, last, template=template)
        reply = call_model(sent)
        merge: MergeResult | None = None
        if base is None:
            candidate = reply
        else:
            need = min(LOOP_MIN_OVERLAP, len(last.overlap_context) if last else 1)
            merge = merge_with_overlap(base, reply, min_overlap=max(need, 1))
            if merge.restarted:
                candidate = merge.merged
            elif not merge.has_overlap:
                failures += 1
                trace.append(Iteration(index, sent, reply, Case.NO_OVERLAP, merge, False, None,
                                       failures, "the reply does not repeat the end of the "
                                                 "text so far"))
                if failures >= max_failures:
                    return _give_up(fallback, Outcome.FALLBACK_AFTER_FAILURES, trace)
                continue
            else:
                candidate = merge.merged
        restart_note = " (the reply restarted the document)" if merge and merge.restarted \
            else ""
        if _parses(candidate):
            trace.append(Iteration(index, sent, reply, Case.PARSED, merge, True, None, 0,
                                   "the merged text parses" + restart_note))
            return ContinuationResult(candidate, Outcome.COMPLETE, tuple(trace))
        contexts = get_contexts(candidate, budget=budget, marker=marker,
                                overlap_chars=overlap_chars)
        if contexts.json_parsing_success and not contexts.overlap_context:
            trace.append(Iteration(index, sent, reply, Case.COMPLETE, merge, False, contexts, 0,
                                   contexts.description + restart_note))
            return ContinuationResult(contexts.complete_part, Outcome.COMPLETE, tuple(trace))
        if contexts.json_parsing_success:
            base, fallback, last, failures = (contexts.hierarchy_context,
                                              contexts.complete_part, contexts, 0)
            trace.append(Iteration(index, sent, reply, Case.CONTINUE, merge, False, contexts, 0,
                                   contexts.description + restart_note))
            continue
        failures += 1
        trace.append(Iteration(index, sent, reply, Case.BROKEN, merge, False, contexts,
                               failures, contexts.description + restart_note))
        if failures >= max_failures:
            return _give_up(fallback, Outcome.FALLBACK_AFTER_FAILURES, trace)
    return _give_up(fallback, Outcome.MAX_ITERATIONS, trace)


def _give_up(fallback: str | None, outcome: Outcome,
             trace: list[Iteration]) -> ContinuationResult:
    if fallback is None:
        return ContinuationResult("", Outcome.NO_VALID_JSON, tuple(trace))
    return ContinuationResult(fallback, outcome, tuple(trace))
