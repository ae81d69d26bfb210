"""The LangChain v1 adapter (``budgetlens_adapters.langchain_agent.BudgetMiddleware``) in a
real ``create_agent`` run whose model is ``ChatOpenAI`` pointed at the loopback server
(window 4,096, vLLM's refusals)."""

from __future__ import annotations

import json
import logging
import math
from typing import Any

import pytest
from pydantic import BaseModel, Field

pytest.importorskip("langchain.agents")
langchain_openai = pytest.importorskip("langchain_openai")
openai = pytest.importorskip("openai")

from langchain.agents import create_agent  # noqa: E402
from langchain.agents.structured_output import ProviderStrategy, ToolStrategy  # noqa: E402
from langchain_core.tools import tool  # noqa: E402

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
from tests.request_server import REPLY, loopback_server, prompt_tokens  # noqa: E402


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


# ------------------------------------------------------------------ structured output
class Answer(BaseModel):
    """The answer."""

    answer: str = Field(description="The answer text.")


def structured(url: str, guarded: bool, response_format: Any, max_tokens: int) -> Any:
    chat = langchain_openai.ChatOpenAI(model="gpt-4o", base_url=url, api_key="test",
                                       max_retries=0, max_tokens=max_tokens)
    agent = create_agent(chat, tools=[], system_prompt=SYSTEM["content"],
                         response_format=response_format,
                         middleware=[BudgetMiddleware(serving=SERVING)] if guarded else [])
    return agent.invoke({"messages": SHORT[1:]})


def test_a_tool_strategy_schema_is_counted_as_the_tool_it_binds(
        caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, "budgetlens")
    with loopback_server() as server:
        structured(server.base_url, False, ToolStrategy(Answer), 1000)
        state = structured(server.base_url, True, ToolStrategy(Answer), 1000)
        with pytest.raises(openai.BadRequestError, match="maximum context length"):
            structured(server.base_url, False, ToolStrategy(Answer), 4000)
        structured(server.base_url, True, ToolStrategy(Answer), 4000)
    assert server.statuses == [200, 200, 400, 200]
    assert server.bodies[1] == server.bodies[0]
    assert state["structured_response"] == Answer(answer=REPLY)
    sent = json.loads(server.bodies[3])
    assert [t["function"]["name"] for t in sent["tools"]] == ["Answer"]
    prompt = prompt_tokens(sent)
    assert prompt > tokens(SHORT)
    # the tool is counted by the cookbook's rule (exact): no margin
    assert sent["max_completion_tokens"] == WINDOW - prompt
    [warning] = warnings(caplog)
    assert f"clamped from 4,000 to {WINDOW - prompt:,}" in warning


@pytest.mark.parametrize("response_format", [ProviderStrategy(Answer), Answer],
                         ids=["provider", "auto"])
def test_a_provider_strategy_schema_is_counted_as_the_response_format(
        response_format: Any) -> None:
    with loopback_server() as server:
        with pytest.raises(openai.BadRequestError, match="maximum context length"):
            structured(server.base_url, False, response_format, 4000)
        state = structured(server.base_url, True, response_format, 4000)
    assert server.statuses == [400, 200]
    assert state["structured_response"] == Answer(answer=REPLY)
    sent = json.loads(server.bodies[1])
    assert sent["response_format"]["type"] == "json_schema"
    prompt = prompt_tokens(sent)
    assert prompt > tokens(SHORT)
    # a schema's count is ≈: the margin is 12% + 128
    assert sent["max_completion_tokens"] == WINDOW - prompt - (math.ceil(prompt * 12 / 100) + 128)


@tool
def track_parcel(parcel: str) -> str:
    """Where a parcel is."""
    return f"{parcel} is on its way"


def test_tools_bound_to_the_model_before_are_counted() -> None:
    with loopback_server() as server:
        chat = langchain_openai.ChatOpenAI(model="gpt-4o", base_url=server.base_url,
                                           api_key="test", max_retries=0, max_tokens=4000)
        agent = create_agent(chat.bind_tools([track_parcel]), tools=[],
                             system_prompt=SYSTEM["content"],
                             middleware=[BudgetMiddleware(serving=SERVING)])
        agent.invoke({"messages": SHORT[1:]})
    assert server.statuses == [200]
    sent = json.loads(server.bodies[0])
    assert [t["function"]["name"] for t in sent["tools"]] == ["track_parcel"]
    prompt = prompt_tokens(sent)
    assert prompt > tokens(SHORT)
    # the parameter has no description: the tool's count is ≈, the margin 12% + 128
    assert sent["max_completion_tokens"] == WINDOW - prompt - (math.ceil(prompt * 12 / 100) + 128)
