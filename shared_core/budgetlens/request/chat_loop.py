"""The JSON continuation loop over chat messages, and the length signal of responses.

``continue_json_chat(call_model, messages, max_tokens=...)`` runs the loop of
``continuation.loop`` (the same merge, the same cases, the same decisions) with a chat model
function: ``call_model(messages) -> (text, usage, finish_reason)``. The first call sends
``messages``; each continuation sends them plus one user message asking for the rest
(``CHAT_CONTINUATION_TEMPLATE``: the JSON so far, the cut marked, the characters to repeat).

A cut is found without trusting ``finish_reason``: servers hide it (Ollama reports ``stop``
for a reply cut by ``num_predict``; vLLM has reported ``tool_calls``). A reply counts as cut
when its JSON is cut (``get_contexts``), and the trace records every signal of each call
(``ChatCall.signals``): ``json`` (the JSON is cut), ``completion_tokens`` (the usage shows
the reply used ``max_tokens`` or more) and ``finish_reason`` (the server said so: OpenAI
``length``, Anthropic ``max_tokens``, Gemini ``MAX_TOKENS``). A call whose signals disagree
with its ``finish_reason`` says so in its ``note``.

``finish_reason``, ``stopped_at_length``, ``completion_tokens`` and ``read_reply`` read
those fields from a response as a dict (OpenAI chat completions, Anthropic messages, Gemini
``generateContent``), so a model function is a few lines around any client.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from budgetlens.continuation.contexts import DEFAULT_BUDGET, DEFAULT_MARKER, DEFAULT_OVERLAP_CHARS
from budgetlens.continuation.loop import (
    CONTINUATION_TEMPLATE,
    DEFAULT_MAX_FAILURES,
    DEFAULT_MAX_ITERATIONS,
    Case,
    Iteration,
    Outcome,
    _Loop,
)
from budgetlens.request.framing import Message

CHAT_CONTINUATION_TEMPLATE = CONTINUATION_TEMPLATE.split("---\n", 1)[1]
"""The user message of a continuation: ``loop.CONTINUATION_TEMPLATE`` after its ``---``
line (the chat keeps the original prompt as its own messages)."""

#: ``finish_reason`` / ``stop_reason`` / ``finishReason`` values that mean "cut by the
#: output limit" (OpenAI, Anthropic, Gemini; Ollama's ``done_reason`` says ``length``).
LENGTH_REASONS = frozenset({"length", "max_tokens", "MAX_TOKENS"})

ChatReply = tuple[str, Any, "str | None"]
"""What a chat model function returns: the text, its usage, its finish reason."""


def _first(items: Any) -> Mapping[str, Any]:
    if isinstance(items, Sequence) and items and isinstance(items[0], Mapping):
        return items[0]
    return {}


def finish_reason(response: Mapping[str, Any]) -> str | None:
    """The finish reason of a response dict: OpenAI ``choices[0].finish_reason``, Anthropic
    ``stop_reason``, Gemini ``candidates[0].finishReason``, Ollama ``done_reason``."""
    for value in (_first(response.get("choices")).get("finish_reason"),
                  response.get("stop_reason"),
                  _first(response.get("candidates")).get("finishReason"),
                  response.get("done_reason")):
        if isinstance(value, str):
            return value
    return None


def stopped_at_length(response: Mapping[str, Any]) -> bool:
    """The response says it was cut by the output limit (OpenAI ``length``, Anthropic
    ``max_tokens``, Gemini ``MAX_TOKENS``). A server may hide it: see the module docstring."""
    return finish_reason(response) in LENGTH_REASONS


def completion_tokens(usage: Any) -> int | None:
    """The output tokens of a usage: an ``int``, or a mapping / object with OpenAI's
    ``completion_tokens``, Anthropic's ``output_tokens``, Gemini's ``candidatesTokenCount``
    or Ollama's ``eval_count``; None when none is there."""
    if isinstance(usage, int) and not isinstance(usage, bool):
        return usage
    for key in ("completion_tokens", "output_tokens", "candidatesTokenCount", "eval_count"):
        value = usage.get(key) if isinstance(usage, Mapping) else getattr(usage, key, None)
        if isinstance(value, int) and not isinstance(value, bool):
            return value
    return None


def _text_of(response: Mapping[str, Any]) -> str | None:
    message = _first(response.get("choices")).get("message")
    if isinstance(message, Mapping) and isinstance(message.get("content"), str):
        return str(message["content"])
    content = response.get("content")
    if isinstance(content, list):  # Anthropic: text blocks
        return "".join(b.get("text", "") for b in content
                       if isinstance(b, Mapping) and b.get("type") == "text")
    parts = _first(response.get("candidates")).get("content")
    if isinstance(parts, Mapping) and isinstance(parts.get("parts"), list):  # Gemini
        return "".join(p.get("text", "") for p in parts["parts"] if isinstance(p, Mapping))
    message = response.get("message")  # Ollama /api/chat
    if isinstance(message, Mapping) and isinstance(message.get("content"), str):
        return str(message["content"])
    return None


def read_reply(response: Mapping[str, Any]) -> ChatReply:
    """``(text, usage, finish_reason)`` of a response dict of OpenAI, Anthropic, Gemini or
    Ollama (``""`` when it holds no text): what a chat model function returns."""
    usage = response.get("usage") or response.get("usageMetadata") or \
        {k: response[k] for k in ("eval_count",) if k in response}
    return _text_of(response) or "", usage, finish_reason(response)


@dataclass(frozen=True)
class ChatCall:
    """One model call of the chat loop: what was sent, what came back, what was decided."""

    iteration: Iteration
    """The loop's decision (its ``prompt`` is the continuation message, ``""`` first)."""
    messages: tuple[Message, ...]
    completion_tokens: int | None
    finish_reason: str | None
    signals: tuple[str, ...]
    """Why the reply counts as cut: ``json``, ``completion_tokens``, ``finish_reason``."""
    note: str


@dataclass(frozen=True)
class ChatContinuationResult:
    """The final JSON text (complete, or the last valid closed part) and the calls."""

    text: str
    outcome: Outcome
    calls: tuple[ChatCall, ...]

    @property
    def complete(self) -> bool:
        return self.outcome is Outcome.COMPLETE

    @property
    def iterations(self) -> tuple[Iteration, ...]:
        return tuple(c.iteration for c in self.calls)


def _signals(case: Case, used: int | None, reason: str | None,
             max_tokens: int | None) -> tuple[tuple[str, ...], str]:
    signals = []
    if case is Case.CONTINUE:
        signals.append("json")
    if used is not None and max_tokens is not None and used >= max_tokens:
        signals.append("completion_tokens")
    if reason in LENGTH_REASONS:
        signals.append("finish_reason")
    note = ""
    if signals and "finish_reason" not in signals:
        note = (f"cut ({', '.join(signals)}) though the server reported finish_reason"
                f" {reason!r}")
    elif signals == ["finish_reason"]:
        note = "the server reported a cut, but the JSON is whole"
    return tuple(signals), note


class _ChatLoop:
    """``continuation.loop._Loop`` over messages: the same decisions, chat calls traced."""

    def __init__(self, messages: Sequence[Message], max_tokens: int | None,
                 **options: Any) -> None:
        self.loop = _Loop("", **options)
        self.original = tuple(messages)
        self.max_tokens = max_tokens
        self.calls: list[ChatCall] = []

    def request(self) -> tuple[str, tuple[Message, ...]]:
        if self.loop.last is None:
            return "", self.original
        prompt = self.loop.prompt()
        return prompt, (*self.original, {"role": "user", "content": prompt})

    def take(self, index: int, sent: tuple[str, tuple[Message, ...]],
             reply: object) -> ChatContinuationResult | None:
        text, usage, reason = reply if isinstance(reply, tuple) and len(reply) == 3 else \
            (reply, None, None)
        done = self.loop.take(index, sent[0], text)
        iteration = self.loop.trace[-1]
        used = completion_tokens(usage)
        signals, note = _signals(iteration.case, used, reason if isinstance(reason, str)
                                 else None, self.max_tokens)
        self.calls.append(ChatCall(iteration, sent[1], used, reason, signals, note))
        return None if done is None else self.result(done.text, done.outcome)

    def result(self, text: str, outcome: Outcome) -> ChatContinuationResult:
        return ChatContinuationResult(text, outcome, tuple(self.calls))

    def give_up(self) -> ChatContinuationResult:
        done = self.loop.give_up()
        return self.result(done.text, done.outcome)


def _options(budget: int, marker: str, overlap_chars: int, max_iterations: int,
             max_failures: int, template: str) -> dict[str, Any]:
    return dict(budget=budget, marker=marker, overlap_chars=overlap_chars,
                max_iterations=max_iterations, max_failures=max_failures, template=template)


def continue_json_chat(call_model: Callable[[list[Message]], ChatReply | str],
                       messages: Sequence[Message], *, max_tokens: int | None = None,
                       budget: int = DEFAULT_BUDGET, marker: str = DEFAULT_MARKER,
                       overlap_chars: int = DEFAULT_OVERLAP_CHARS,
                       max_iterations: int = DEFAULT_MAX_ITERATIONS,
                       max_failures: int = DEFAULT_MAX_FAILURES,
                       template: str = CHAT_CONTINUATION_TEMPLATE) -> ChatContinuationResult:
    """Call ``call_model(messages)`` until its JSON answer is whole (module docstring).

    ``call_model`` returns ``(text, usage, finish_reason)`` (``read_reply`` makes that of a
    response dict) or the text alone; ``max_tokens`` is the output limit you send with each
    call (a reply whose usage reaches it is recorded as cut). A text that is not a ``str``
    raises ``ModelReplyError``; exceptions of ``call_model`` propagate unchanged."""
    loop = _ChatLoop(messages, max_tokens, **_options(
        budget, marker, overlap_chars, max_iterations, max_failures, template))
    for index in loop.loop.calls():
        sent = loop.request()
        done = loop.take(index, sent, call_model(list(sent[1])))
        if done is not None:
            return done
    return loop.give_up()


async def continue_json_chat_async(
        call_model: Callable[[list[Message]], Awaitable[ChatReply | str]],
        messages: Sequence[Message], *, max_tokens: int | None = None,
        budget: int = DEFAULT_BUDGET, marker: str = DEFAULT_MARKER,
        overlap_chars: int = DEFAULT_OVERLAP_CHARS,
        max_iterations: int = DEFAULT_MAX_ITERATIONS, max_failures: int = DEFAULT_MAX_FAILURES,
        template: str = CHAT_CONTINUATION_TEMPLATE) -> ChatContinuationResult:
    """``continue_json_chat`` with an async model function (``await call_model(messages)``)."""
    loop = _ChatLoop(messages, max_tokens, **_options(
        budget, marker, overlap_chars, max_iterations, max_failures, template))
    for index in loop.loop.calls():
        sent = loop.request()
        reply: object = call_model(list(sent[1]))
        if inspect.isawaitable(reply):
            reply = await reply
        done = loop.take(index, sent, reply)
        if done is not None:
            return done
    return loop.give_up()
