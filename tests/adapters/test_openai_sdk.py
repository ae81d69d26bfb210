"""The OpenAI SDK adapter (``budgetlens_adapters.openai_sdk.guard``) against the loopback
server (tests/request_server.py, window 4,096, vLLM's refusals): an over-window request is
clamped or trimmed and succeeds, or is refused before it is sent; a request that fits is
sent byte for byte as without the adapter."""

from __future__ import annotations

import json
import logging
import math
from typing import Any

import pytest
from pydantic import BaseModel

openai = pytest.importorskip("openai")

from budgetlens import RequestDoesNotFit  # noqa: E402
from budgetlens_adapters.openai_sdk import guard  # noqa: E402
from tests.adapters.conversation import (  # noqa: E402
    HUGE_QUESTION,
    LONG,
    SERVING,
    SHORT,
    SYSTEM,
    WINDOW,
    check_sizes,
    tokens,
)
from tests.request_server import REPLY, loopback_server, prompt_tokens  # noqa: E402


def client(url: str) -> openai.OpenAI:
    return openai.OpenAI(base_url=url, api_key="test", max_retries=0)


def warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records
            if r.name == "budgetlens" and r.levelno == logging.WARNING]


def test_a_request_that_fits_is_sent_byte_for_byte(caplog: pytest.LogCaptureFixture) -> None:
    check_sizes()
    caplog.set_level(logging.WARNING, "budgetlens")
    with loopback_server() as server:
        plain = client(server.base_url)
        plain.chat.completions.create(model="gpt-4o", messages=SHORT, max_tokens=1000)
        guarded = guard(client(server.base_url), serving=SERVING)
        reply = guarded.chat.completions.create(model="gpt-4o", messages=SHORT,
                                                max_tokens=1000)
    assert server.statuses == [200, 200]
    assert server.bodies[1] == server.bodies[0]
    assert reply.usage.prompt_tokens == tokens(SHORT)
    assert warnings(caplog) == []


def test_an_output_limit_over_the_window_is_clamped(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, "budgetlens")
    with loopback_server() as server:
        with pytest.raises(openai.BadRequestError, match="maximum context length is 4096"):
            client(server.base_url).chat.completions.create(
                model="gpt-4o", messages=SHORT, max_tokens=4000)
        reply = guard(client(server.base_url), serving=SERVING).chat.completions.create(
            model="gpt-4o", messages=SHORT, max_tokens=4000)
    assert server.statuses == [400, 200]
    sent = json.loads(server.bodies[1])
    assert sent["messages"] == SHORT
    assert sent["max_tokens"] == WINDOW - tokens(SHORT)
    assert reply.usage.prompt_tokens == tokens(SHORT)
    [warning] = warnings(caplog)
    assert f"max_tokens clamped from 4,000 to {WINDOW - tokens(SHORT):,}" in warning


def test_history_over_the_window_is_trimmed(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, "budgetlens")
    with loopback_server() as server:
        with pytest.raises(openai.BadRequestError, match="Please reduce the length"):
            client(server.base_url).chat.completions.create(model="gpt-4o", messages=LONG)
        guard(client(server.base_url), serving=SERVING).chat.completions.create(
            model="gpt-4o", messages=LONG)
    assert server.statuses == [400, 200]
    sent = json.loads(server.bodies[1])["messages"]
    # the oldest turns go whole: the system prompt and the question stay
    assert sent[0] == LONG[0] and sent[-1] == LONG[-1]
    assert sent[1:-1] == LONG[len(LONG) - len(sent) + 1:-1]
    assert tokens(sent) <= WINDOW - 1 < tokens([*sent[:1], *LONG[len(LONG) - len(sent) - 1:]])
    assert any("history trimmed" in w for w in warnings(caplog))


def test_a_request_nothing_makes_fit_is_refused_before_it_is_sent() -> None:
    with loopback_server() as server:
        guarded = guard(client(server.base_url), serving=SERVING)
        with pytest.raises(RequestDoesNotFit) as refused:
            guarded.chat.completions.create(model="gpt-4o", messages=HUGE_QUESTION,
                                            max_tokens=500)
    assert server.bodies == []
    assert refused.value.fit.input_tokens == tokens(HUGE_QUESTION)


async def test_the_async_client_is_guarded_the_same_way(
        caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, "budgetlens")
    with loopback_server() as server:
        plain = openai.AsyncOpenAI(base_url=server.base_url, api_key="test", max_retries=0)
        await plain.chat.completions.create(model="gpt-4o", messages=SHORT, max_tokens=1000)
        guarded = guard(openai.AsyncOpenAI(base_url=server.base_url, api_key="test",
                                           max_retries=0), serving=SERVING)
        await guarded.chat.completions.create(model="gpt-4o", messages=SHORT, max_tokens=1000)
        await guarded.chat.completions.create(model="gpt-4o", messages=SHORT,
                                              max_completion_tokens=4000)
        with pytest.raises(RequestDoesNotFit):
            await guarded.chat.completions.create(model="gpt-4o", messages=HUGE_QUESTION)
    assert server.statuses == [200, 200, 200]
    assert server.bodies[1] == server.bodies[0]
    assert json.loads(server.bodies[2])["max_completion_tokens"] == WINDOW - tokens(SHORT)
    assert len(warnings(caplog)) == 1


def test_a_llamacpp_server_gets_a_prompt_within_its_context(
        caplog: pytest.LogCaptureFixture) -> None:
    # llama.cpp refuses a prompt that fills n_ctx (--ctx-size); the window is given as such
    caplog.set_level(logging.WARNING, "budgetlens")
    with loopback_server(flavor="llamacpp") as server:
        with pytest.raises(openai.BadRequestError,
                           match="the request exceeds the available context size"):
            client(server.base_url).chat.completions.create(model="gpt-4o", messages=LONG)
        guard(client(server.base_url), window=WINDOW).chat.completions.create(
            model="gpt-4o", messages=LONG)
    assert server.statuses == [400, 200]
    sent = json.loads(server.bodies[1])["messages"]
    assert sent[0] == LONG[0] and sent[-1] == LONG[-1] and tokens(sent) < WINDOW
    assert any("history trimmed" in w for w in warnings(caplog))


# ------------------------------------------------------------------ parse, Responses, copies
class Answer(BaseModel):
    answer: str


RESPONSE_TOOLS = [{"type": "function", "name": "track_parcel",
                   "description": "Where a parcel is.", "strict": False,
                   "parameters": {"type": "object", "properties": {
                       "parcel": {"type": "string", "description": "The parcel's number."}}}}]


def approx_room(prompt: int) -> int:
    """The output a ≈ count leaves: the window less the prompt and "12% + 128" of it."""
    return WINDOW - prompt - (math.ceil(prompt * 12 / 100) + 128)


def test_parse_is_clamped_to_the_window_with_its_schema_counted(
        caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, "budgetlens")
    with loopback_server() as server:
        plain = client(server.base_url)
        plain.chat.completions.parse(model="gpt-4o", messages=SHORT, response_format=Answer,
                                     max_tokens=1000)
        guarded = guard(client(server.base_url), serving=SERVING)
        guarded.chat.completions.parse(model="gpt-4o", messages=SHORT,
                                       response_format=Answer, max_tokens=1000)
        with pytest.raises(openai.BadRequestError, match="maximum context length is 4096"):
            plain.chat.completions.parse(model="gpt-4o", messages=SHORT,
                                         response_format=Answer, max_tokens=4000)
        reply = guarded.chat.completions.parse(model="gpt-4o", messages=SHORT,
                                               response_format=Answer, max_tokens=4000)
    assert server.statuses == [200, 200, 400, 200]
    assert server.bodies[1] == server.bodies[0]
    assert reply.choices[0].message.parsed == Answer(answer=REPLY)
    prompt = reply.usage.prompt_tokens
    assert prompt > tokens(SHORT)  # the schema is counted
    sent = json.loads(server.bodies[3])
    assert sent["messages"] == SHORT
    assert sent["max_tokens"] == approx_room(prompt)  # a schema's count is ≈
    [warning] = warnings(caplog)
    assert f"max_tokens clamped from 4,000 to {approx_room(prompt):,}" in warning


def as_input(messages: list[dict[str, Any]]) -> dict[str, Any]:
    """A chat as the Responses API takes it: the system prompt as ``instructions``."""
    assert messages[0] == SYSTEM
    return {"instructions": SYSTEM["content"], "input": messages[1:]}


def test_responses_fitting_is_sent_byte_for_byte_and_over_the_window_is_clamped(
        caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, "budgetlens")
    request = {"model": "gpt-4o", **as_input(SHORT), "tools": RESPONSE_TOOLS}
    with loopback_server() as server:
        plain = client(server.base_url)
        plain.responses.create(**request, max_output_tokens=1000)
        guarded = guard(client(server.base_url), serving=SERVING)
        guarded.responses.create(**request, max_output_tokens=1000)
        with pytest.raises(openai.BadRequestError, match="exceeds the context window"):
            plain.responses.create(**request, max_output_tokens=4000)
        reply = guarded.responses.create(**request, max_output_tokens=4000)
    assert server.statuses == [200, 200, 400, 200]
    assert server.bodies[1] == server.bodies[0]
    assert reply.output_text == REPLY
    prompt = reply.usage.input_tokens
    assert prompt > tokens(SHORT)  # the tools are counted
    sent = json.loads(server.bodies[3])
    assert sent["input"] == SHORT[1:] and sent["tools"] == RESPONSE_TOOLS
    assert sent["max_output_tokens"] == approx_room(prompt)
    [warning] = warnings(caplog)
    assert f"max_output_tokens clamped from 4,000 to {approx_room(prompt):,}" in warning


def test_responses_parse_counts_its_text_format_schema() -> None:
    with loopback_server() as server:
        guarded = guard(client(server.base_url), serving=SERVING)
        reply = guarded.responses.parse(model="gpt-4o", **as_input(SHORT), text_format=Answer,
                                        max_output_tokens=4000)
    assert server.statuses == [200]
    assert reply.output_parsed == Answer(answer=REPLY)
    sent = json.loads(server.bodies[0])
    assert sent["text"]["format"]["type"] == "json_schema"
    assert reply.usage.input_tokens > tokens(SHORT)
    assert sent["max_output_tokens"] == approx_room(reply.usage.input_tokens)


def test_responses_history_is_trimmed_and_a_huge_input_refused(
        caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, "budgetlens")
    with loopback_server() as server:
        with pytest.raises(openai.BadRequestError) as refused:
            client(server.base_url).responses.create(model="gpt-4o", **as_input(LONG))
        assert refused.value.code == "context_length_exceeded"
        guarded = guard(client(server.base_url), serving=SERVING)
        reply = guarded.responses.create(model="gpt-4o", **as_input(LONG))
        with pytest.raises(RequestDoesNotFit):
            guarded.responses.create(model="gpt-4o", input=HUGE_QUESTION[1]["content"])
    assert server.statuses == [400, 200]
    sent = json.loads(server.bodies[1])
    kept = len(sent["input"])
    assert sent["instructions"] == SYSTEM["content"] and sent["input"][-1] == LONG[-1]
    assert sent["input"] == LONG[len(LONG) - kept:] and kept < len(LONG) - 1
    assert approx_room(reply.usage.input_tokens) >= 1  # room for a reply is left
    assert any("history trimmed" in w for w in warnings(caplog))


def test_copies_made_with_options_are_guarded(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, "budgetlens")
    with loopback_server() as server:
        guarded = guard(client(server.base_url), serving=SERVING)
        copy = guarded.with_options(timeout=30)
        copy.chat.completions.create(model="gpt-4o", messages=SHORT, max_tokens=4000)
        copy.copy(max_retries=0).responses.create(model="gpt-4o", **as_input(SHORT),
                                                  max_output_tokens=4000)
        with pytest.raises(RequestDoesNotFit):
            copy.with_options(timeout=10).chat.completions.create(model="gpt-4o",
                                                                  messages=HUGE_QUESTION)
    assert server.statuses == [200, 200]
    assert json.loads(server.bodies[0])["max_tokens"] == WINDOW - tokens(SHORT)
    assert json.loads(server.bodies[1])["max_output_tokens"] == approx_room(tokens(SHORT))
    assert len(warnings(caplog)) == 2


async def test_the_async_client_guards_responses_and_copies() -> None:
    with loopback_server() as server:
        guarded = guard(openai.AsyncOpenAI(base_url=server.base_url, api_key="test",
                                           max_retries=0), serving=SERVING)
        await guarded.responses.create(model="gpt-4o", **as_input(SHORT),
                                       max_output_tokens=4000)
        await guarded.with_options(timeout=30).chat.completions.parse(
            model="gpt-4o", messages=SHORT, response_format=Answer, max_tokens=4000)
        with pytest.raises(RequestDoesNotFit):
            await guarded.with_options(timeout=30).responses.create(
                model="gpt-4o", input=HUGE_QUESTION[1]["content"])
    assert server.statuses == [200, 200]
    assert json.loads(server.bodies[0])["max_output_tokens"] == approx_room(tokens(SHORT))
    parsed = json.loads(server.bodies[1])
    assert parsed["max_tokens"] == approx_room(prompt_tokens(parsed))


def test_responses_function_calls_are_trimmed_with_their_turn() -> None:
    call = {"type": "function_call", "call_id": "call_1", "name": "track_parcel",
            "arguments": json.dumps({"parcel": "1000"})}
    output = {"type": "function_call_output", "call_id": "call_1",
              "output": json.dumps({"where": "Lyon"})}
    items = [LONG[1], call, output, *LONG[2:]]  # the oldest question, its call and result
    with loopback_server() as server:
        guard(client(server.base_url), serving=SERVING).responses.create(
            model="gpt-4o", instructions=SYSTEM["content"], input=items,
            tools=RESPONSE_TOOLS)
    assert server.statuses == [200]
    sent = json.loads(server.bodies[0])["input"]
    assert sent[-1] == LONG[-1] and call not in sent and output not in sent
    assert sent == items[len(items) - len(sent):]  # whole turns, oldest first
