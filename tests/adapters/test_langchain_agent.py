"""The LangChain v1 adapter (``budgetlens_adapters.langchain_agent.BudgetMiddleware``) in a
real ``create_agent`` run whose model is ``ChatOpenAI`` pointed at the loopback server
(window 4,096, vLLM's refusals)."""

from __future__ import annotations

import json
import logging
from typing import Any

import pytest

pytest.importorskip("langchain.agents")
langchain_openai = pytest.importorskip("langchain_openai")
openai = pytest.importorskip("openai")

from langchain.agents import create_agent  # noqa: E402

from budgetlens import RequestDoesNotFit  # noqa: E402
from budgetlens_adapters.langchain_agent import BudgetMiddleware  # noqa: E402
from tests.adapters.conversation import (  # noqa: E402
    HUGE_QUESTION,
    LONG,
    SERVING,
    SHORT,
    SYSTEM,
    WINDOW,
    tokens,
)
from tests.request_server import loopback_server  # noqa: E402


def run(url: str, messages: list[dict[str, Any]], guarded: bool, **model: Any) -> Any:
    chat = langchain_openai.ChatOpenAI(model="gpt-4o", base_url=url, api_key="test",
                                       max_retries=0, **model)
    agent = create_agent(chat, tools=[], system_prompt=SYSTEM["content"],
                         middleware=[BudgetMiddleware(serving=SERVING)] if guarded else [])
    assert messages[0] == SYSTEM
    return agent.invoke({"messages": messages[1:]})


def warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records
            if r.name == "budgetlens" and r.levelno == logging.WARNING]


def test_a_fitting_call_is_sent_byte_for_byte(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, "budgetlens")
    with loopback_server() as server:
        run(server.base_url, SHORT, False, max_tokens=1000)
        state = run(server.base_url, SHORT, True, max_tokens=1000)
    assert server.statuses == [200, 200]
    assert server.bodies[1] == server.bodies[0]
    assert json.loads(server.bodies[1])["messages"] == SHORT
    assert state["messages"][-1].content
    assert warnings(caplog) == []


def test_an_output_limit_over_the_window_is_clamped(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, "budgetlens")
    with loopback_server() as server:
        with pytest.raises(openai.BadRequestError, match="maximum context length is 4096"):
            run(server.base_url, SHORT, False, max_tokens=4000)
        run(server.base_url, SHORT, True, max_tokens=4000)
    assert server.statuses == [400, 200]
    sent = json.loads(server.bodies[1])
    assert sent["messages"] == SHORT
    assert sent["max_completion_tokens"] == WINDOW - tokens(SHORT)
    [warning] = warnings(caplog)
    assert f"clamped from 4,000 to {WINDOW - tokens(SHORT):,}" in warning


def test_history_over_the_window_is_left_out_of_the_call(
        caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, "budgetlens")
    with loopback_server() as server:
        with pytest.raises(openai.BadRequestError, match="Please reduce the length"):
            run(server.base_url, LONG, False)
        state = run(server.base_url, LONG, True)
    assert server.statuses == [400, 200]
    sent = json.loads(server.bodies[1])["messages"]
    assert sent[0] == LONG[0] and sent[-1] == LONG[-1] and len(sent) < len(LONG)
    assert sent[1:-1] == LONG[len(LONG) - len(sent) + 1:-1]
    assert tokens(sent) < WINDOW
    assert len(state["messages"]) == len(LONG)  # the agent's state keeps every message
    assert any("history trimmed" in w for w in warnings(caplog))


def test_a_call_nothing_makes_fit_is_refused_before_it_is_sent() -> None:
    with loopback_server() as server, pytest.raises(RequestDoesNotFit):
        run(server.base_url, HUGE_QUESTION, True, max_tokens=500)
    assert server.bodies == []


async def test_the_async_agent_is_guarded_too() -> None:
    with loopback_server() as server:
        chat = langchain_openai.ChatOpenAI(model="gpt-4o", base_url=server.base_url,
                                           api_key="test", max_retries=0, max_tokens=4000)
        agent = create_agent(chat, tools=[], system_prompt=SYSTEM["content"],
                             middleware=[BudgetMiddleware(serving=SERVING)])
        await agent.ainvoke({"messages": SHORT[1:]})
    assert server.statuses == [200]
    assert json.loads(server.bodies[0])["max_completion_tokens"] == WINDOW - tokens(SHORT)
