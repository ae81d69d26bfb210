"""The OpenAI SDK adapter (``budgetlens_adapters.openai_sdk.guard``) against the loopback
server (tests/request_server.py, window 4,096, vLLM's refusals): an over-window request is
clamped or trimmed and succeeds, or is refused before it is sent; a request that fits is
sent byte for byte as without the adapter."""

from __future__ import annotations

import json
import logging

import pytest

openai = pytest.importorskip("openai")

from budgetlens import RequestDoesNotFit  # noqa: E402
from budgetlens_adapters.openai_sdk import guard  # noqa: E402
from tests.adapters.conversation import (  # noqa: E402
    HUGE_QUESTION,
    LONG,
    SERVING,
    SHORT,
    WINDOW,
    check_sizes,
    tokens,
)
from tests.request_server import loopback_server  # noqa: E402


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
