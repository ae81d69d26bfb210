"""The continuation loop: ask a model for a JSON answer until it is whole.

``continue_json(call_model, prompt)`` (and ``continue_json_async`` for an async model
function) runs the loop documented in docs/json-continuation.md, "The continuation loop"
(steps 1-6, cases A/B/C):

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

Every iteration is recorded in the trace. "Parses" means strict JSON everywhere, as
``get_contexts`` reads it: ``NaN`` and ``Infinity`` are not JSON.
"""

from __future__ import annotations

import inspect
import json
import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from enum import Enum
from typing import Any, ClassVar

from budgetlens.continuation.contexts import (
    DEFAULT_BUDGET,
    DEFAULT_MARKER,
    DEFAULT_OVERLAP_CHARS,
    JsonContexts,
    get_contexts,
)
from budgetlens.continuation.merge import MergeResult, merge_with_overlap
from budgetlens.continuation.syntax import reject_constant
from budgetlens.serialize import JSON_AS, JSON_KEY

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
    """How the loop ended (``ContinuationResult.outcome``)."""

    COMPLETE = "complete"                      # a whole JSON value
    FALLBACK_AFTER_FAILURES = "fallback_after_failures"  # last valid closed part
    MAX_ITERATIONS = "max_iterations"          # last valid closed part
    NO_VALID_JSON = "no_valid_json"            # nothing valid was ever received


def _cut_of(contexts: JsonContexts | None) -> Any:
    """An iteration's contexts in its JSON: only their cut."""
    return contexts.cut if contexts else None


@dataclass(frozen=True)
class Iteration:
    """One model call: what was sent, what came back, and what was decided.

    Its JSON (``to_jsonable``) gives the cut of its contexts, as ``cut``, not the whole
    contexts."""

    index: int
    prompt: str
    reply: str
    case: Case
    merge: MergeResult | None      # None on the first call and after a restart reset
    parsed: bool                   # the candidate parsed as it is
    contexts: JsonContexts | None = field(  # when get_contexts was consulted
        metadata={JSON_KEY: "cut", JSON_AS: _cut_of})
    failures: int                  # consecutive failures after this iteration
    note: str

    JSON_ORDER: ClassVar = ("index", "prompt", "reply", "case", "parsed", "failures", "merge",
                            "contexts", "note")


@dataclass(frozen=True)
class ContinuationResult:
    """The final JSON text (complete, or the last valid closed part) and the trace.

    Its JSON (``to_jsonable``) adds ``complete``."""

    text: str
    outcome: Outcome
    iterations: tuple[Iteration, ...]

    JSON_ORDER: ClassVar = ("text", "outcome", "complete", "iterations")

    @property
    def complete(self) -> bool:
        return self.outcome is Outcome.COMPLETE


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
    """Strict JSON, as ``get_contexts`` reads it: ``NaN`` and ``Infinity`` are not JSON."""
    try:
        json.loads(text, parse_constant=reject_constant)
    except (ValueError, RecursionError):
        return False
    return True


class ModelReplyError(TypeError):
    """The model function returned something other than the reply text (a ``str``).

    ``index`` is the model call (0-based) that returned ``reply``; ``iterations`` is the trace
    up to that call and ``fallback`` the last valid closed JSON received before it (or None),
    so a runner loses nothing it already had.
    """

    def __init__(self, reply: object, index: int, iterations: tuple[Iteration, ...],
                 fallback: str | None) -> None:
        if reply is None:
            what = "None"
        elif isinstance(reply, bytes):
            what = "bytes (decode them first)"
        else:
            name = type(reply).__name__
            what = f"{'an' if name[:1] in 'aeiouAEIOU' else 'a'} {name}, not a str"
        super().__init__(f"the model function returned {what}; it must return the reply text")
        self.reply = reply
        self.index = index
        self.iterations = iterations
        self.fallback = fallback


class _Loop:
    """The decisions of the continuation loop, one model reply at a time.

    The model call itself happens outside (``continue_json`` calls a function,
    ``continue_json_async`` awaits a coroutine), so both variants share every decision.
    """

    def __init__(self, prompt: str, *, budget: int, marker: str, overlap_chars: int,
                 max_iterations: int, max_failures: int, template: str) -> None:
        if max_iterations < 1 or max_failures < 1:
            raise ValueError("max_iterations and max_failures must be >= 1")
        self.original = prompt
        self.budget, self.marker, self.overlap_chars = budget, marker, overlap_chars
        self.max_iterations, self.max_failures = max_iterations, max_failures
        self.template = template
        self.trace: list[Iteration] = []
        self.base: str | None = None             # the CUT text so far
        self.fallback: str | None = None         # the last valid CLOSED part
        self.last: JsonContexts | None = None    # contexts of the base, for the next prompt
        self.failures = 0

    def calls(self) -> range:
        return range(self.max_iterations)

    def prompt(self) -> str:
        """The prompt of the next model call."""
        if self.last is None:
            return self.original
        return build_continuation_prompt(self.original, self.last, template=self.template)

    def take(self, index: int, sent: str, reply: object) -> ContinuationResult | None:
        """Record the model's ``reply`` to ``sent``; the result when the loop is finished."""
        if not isinstance(reply, str):
            raise ModelReplyError(reply, index, tuple(self.trace), self.fallback)
        merge: MergeResult | None = None
        if self.base is None:
            candidate = reply
        else:
            last = self.last
            need = min(LOOP_MIN_OVERLAP, len(last.overlap_context) if last else 1)
            merge = merge_with_overlap(self.base, reply, min_overlap=max(need, 1))
            if not merge.restarted and not merge.has_overlap:
                return self._failure(Iteration(
                    index, sent, reply, Case.NO_OVERLAP, merge, False, None,
                    self.failures + 1, "the reply does not repeat the end of the text so far"))
            candidate = merge.merged
        restart_note = " (the reply restarted the document)" if merge and merge.restarted \
            else ""
        if _parses(candidate):
            self.trace.append(Iteration(index, sent, reply, Case.PARSED, merge, True, None, 0,
                                        "the merged text parses" + restart_note))
            return ContinuationResult(candidate, Outcome.COMPLETE, tuple(self.trace))
        contexts = get_contexts(candidate, budget=self.budget, marker=self.marker,
                                overlap_chars=self.overlap_chars)
        note = contexts.description + restart_note
        if contexts.json_parsing_success and not contexts.overlap_context:
            self.trace.append(Iteration(index, sent, reply, Case.COMPLETE, merge, False,
                                        contexts, 0, note))
            return ContinuationResult(contexts.complete_part, Outcome.COMPLETE,
                                      tuple(self.trace))
        if contexts.json_parsing_success:
            self.base, self.fallback = contexts.hierarchy_context, contexts.complete_part
            self.last, self.failures = contexts, 0
            self.trace.append(Iteration(index, sent, reply, Case.CONTINUE, merge, False,
                                        contexts, 0, note))
            return None
        return self._failure(Iteration(index, sent, reply, Case.BROKEN, merge, False, contexts,
                                       self.failures + 1, note))

    def _failure(self, iteration: Iteration) -> ContinuationResult | None:
        self.failures = iteration.failures
        self.trace.append(iteration)
        if self.failures >= self.max_failures:
            return self.give_up(Outcome.FALLBACK_AFTER_FAILURES)
        return None

    def give_up(self, outcome: Outcome = Outcome.MAX_ITERATIONS) -> ContinuationResult:
        if self.fallback is None:
            return ContinuationResult("", Outcome.NO_VALID_JSON, tuple(self.trace))
        return ContinuationResult(self.fallback, outcome, tuple(self.trace))


def continue_json(call_model: Callable[[str], str], prompt: str, *,
                  budget: int = DEFAULT_BUDGET, marker: str = DEFAULT_MARKER,
                  overlap_chars: int = DEFAULT_OVERLAP_CHARS,
                  max_iterations: int = DEFAULT_MAX_ITERATIONS,
                  max_failures: int = DEFAULT_MAX_FAILURES,
                  template: str = CONTINUATION_TEMPLATE) -> ContinuationResult:
    """Call ``call_model`` until its JSON answer is whole (see the module docstring).

    ``call_model(prompt) -> reply text``; a reply that is not a ``str`` (``None``) raises
    ``ModelReplyError``. Exceptions raised by ``call_model`` itself propagate unchanged.
    """
    loop = _Loop(prompt, budget=budget, marker=marker, overlap_chars=overlap_chars,
                 max_iterations=max_iterations, max_failures=max_failures, template=template)
    for index in loop.calls():
        sent = loop.prompt()
        done = loop.take(index, sent, call_model(sent))
        if done is not None:
            return done
    return loop.give_up()


async def continue_json_async(call_model: Callable[[str], Awaitable[str]], prompt: str, *,
                              budget: int = DEFAULT_BUDGET, marker: str = DEFAULT_MARKER,
                              overlap_chars: int = DEFAULT_OVERLAP_CHARS,
                              max_iterations: int = DEFAULT_MAX_ITERATIONS,
                              max_failures: int = DEFAULT_MAX_FAILURES,
                              template: str = CONTINUATION_TEMPLATE) -> ContinuationResult:
    """``continue_json`` with an async model function: ``await call_model(prompt)``.

    The same loop and the same decisions; only the model call is awaited (a function that
    returns the text directly is accepted too).
    """
    loop = _Loop(prompt, budget=budget, marker=marker, overlap_chars=overlap_chars,
                 max_iterations=max_iterations, max_failures=max_failures, template=template)
    for index in loop.calls():
        sent = loop.prompt()
        reply: object = call_model(sent)
        if inspect.isawaitable(reply):
            reply = await reply
        done = loop.take(index, sent, reply)
        if done is not None:
            return done
    return loop.give_up()
