"""The chat continuation loop against a fake server that cuts each reply at max_tokens (its
tokens counted with plain tiktoken) and reports ``finish_reason: stop``, as Ollama does; the
helpers that read a response's text, usage and finish reason."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from budgetlens import (
    ChatContinuationResult,
    continue_json_chat,
    continue_json_chat_async,
    read_reply,
    stopped_at_length,
)
from budgetlens.continuation.loop import Case, Outcome
from budgetlens.request.chat_loop import completion_tokens, finish_reason

from .reference import encoding

O200K = encoding("o200k_base")
LIMIT = 120
ANSWER = json.dumps({"orders": [
    {"id": 1000 + i, "status": ["shipped", "late", "returned"][i % 3],
     "note": f"Colis n°{i} – déjà parti, ETA {i % 28 + 1} Dec"} for i in range(25)]},
    ensure_ascii=False)
MESSAGES = [{"role": "system", "content": "Reply with JSON only."},
            {"role": "user", "content": "List my orders as JSON."}]


class FakeServer:
    """Writes ANSWER, from where the continuation message's overlap says, cut at
    ``LIMIT`` tokens; always reports ``stop``."""

    def __init__(self) -> None:
        self.requests: list[list[dict[str, Any]]] = []

    def __call__(self, messages: list[dict[str, Any]]) -> tuple[str, dict[str, int], str]:
        self.requests.append(messages)
        start = 0
        if len(messages) > len(MESSAGES):
            ask = messages[-1]["content"]
            overlap = ask.split("verbatim:\n", 1)[1].split("\nthen write the rest", 1)[0]
            start = ANSWER.index(overlap)
        tokens = O200K.encode(ANSWER[start:])[:LIMIT]
        text = O200K.decode(tokens, errors="replace").rstrip("\ufffd")
        return text, {"prompt_tokens": 50, "completion_tokens": len(tokens)}, "stop"


def test_a_reply_cut_at_max_tokens_is_recovered_though_the_server_says_stop() -> None:
    server = FakeServer()
    result = continue_json_chat(server, MESSAGES, max_tokens=LIMIT)
    assert isinstance(result, ChatContinuationResult)
    assert result.complete and result.outcome is Outcome.COMPLETE
    assert json.loads(result.text) == json.loads(ANSWER)
    assert len(O200K.encode(ANSWER)) > 3 * LIMIT and len(result.calls) >= 4
    first = result.calls[0]
    assert first.finish_reason == "stop" and first.completion_tokens == LIMIT
    assert first.signals == ("json", "completion_tokens")
    assert first.note == "cut (json, completion_tokens) though the server reported" \
                         " finish_reason 'stop'"
    assert [c.iteration.case for c in result.calls][:-1] == \
        [Case.CONTINUE] * (len(result.calls) - 1)
    # the first request is the messages as given; a continuation adds one user message
    assert server.requests[0] == MESSAGES
    for sent in server.requests[1:]:
        assert sent[:2] == MESSAGES and len(sent) == 3 and sent[2]["role"] == "user"
        assert "Continue the JSON exactly where it was cut" in sent[2]["content"]
    assert result.iterations == tuple(c.iteration for c in result.calls)


def test_the_async_loop_takes_the_same_decisions() -> None:
    sync = continue_json_chat(FakeServer(), MESSAGES, max_tokens=LIMIT)

    async def call(messages: list[dict[str, Any]]) -> tuple[str, dict[str, int], str]:
        return FakeServer()(messages)

    result = asyncio.run(continue_json_chat_async(call, MESSAGES, max_tokens=LIMIT))
    assert result.text == sync.text
    assert [c.signals for c in result.calls] == [c.signals for c in sync.calls]


def test_a_whole_reply_is_complete_whatever_the_finish_reason_says() -> None:
    result = continue_json_chat(lambda m: ('{"ok": true}', {"completion_tokens": 5}, "length"),
                                MESSAGES, max_tokens=5)
    assert result.complete and result.text == '{"ok": true}' and len(result.calls) == 1
    assert result.calls[0].signals == ("completion_tokens", "finish_reason")
    plain = continue_json_chat(lambda m: '{"ok": 1}', MESSAGES)  # the text alone
    assert plain.complete and plain.calls[0].signals == ()


def test_reading_the_length_signal_of_each_provider() -> None:
    openai = {"choices": [{"message": {"role": "assistant", "content": "{\"a\": "},
                           "finish_reason": "length"}],
              "usage": {"prompt_tokens": 10, "completion_tokens": 4}}
    anthropic = {"content": [{"type": "text", "text": "{\"a\": "}], "stop_reason": "max_tokens",
                 "usage": {"input_tokens": 10, "output_tokens": 4}}
    gemini = {"candidates": [{"content": {"parts": [{"text": "{\"a\": "}]},
                              "finishReason": "MAX_TOKENS"}],
              "usageMetadata": {"promptTokenCount": 10, "candidatesTokenCount": 4}}
    ollama = {"message": {"role": "assistant", "content": "{\"a\": "}, "done_reason": "stop",
              "eval_count": 4}
    for response in (openai, anthropic, gemini):
        assert stopped_at_length(response) is True
        text, usage, reason = read_reply(response)
        assert text == "{\"a\": " and completion_tokens(usage) == 4 and reason is not None
    assert stopped_at_length(ollama) is False and finish_reason(ollama) == "stop"
    assert read_reply(ollama) == ("{\"a\": ", {"eval_count": 4}, "stop")
    assert stopped_at_length({"choices": [{"finish_reason": "stop"}]}) is False
    assert finish_reason({}) is None and completion_tokens(None) is None
