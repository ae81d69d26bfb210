"""The LiteLLM adapter (``budgetlens_adapters.litellm_proxy.BudgetGuard``) against the
loopback server (window 4,096, vLLM's refusals): the proxy's ``async_pre_call_hook`` called
as the proxy calls it, then the request sent through ``litellm.acompletion``; and the hook
registered in ``litellm.callbacks``, where the SDK calls it before each request."""

from __future__ import annotations

import copy
import json
import logging
import os
from collections.abc import Iterator
from typing import Any

import pytest

# litellm fetches its model price list from the network when imported, unless told not to
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
litellm = pytest.importorskip("litellm")

from budgetlens import RequestDoesNotFit  # noqa: E402
from budgetlens_adapters.litellm_proxy import BudgetGuard  # noqa: E402
from tests.adapters.conversation import (  # noqa: E402
    HUGE_QUESTION,
    LONG,
    SERVING,
    SHORT,
    WINDOW,
    tokens,
)
from tests.request_server import loopback_server  # noqa: E402

TOOLS = [{"type": "function", "function": {
    "name": "track_parcel", "description": "Where a parcel is.",
    "parameters": {"type": "object", "properties": {
        "parcel": {"type": "string", "description": "The parcel's number."},
        "carrier": {"type": "string", "description": "Who carries it",
                    "enum": ["post", "courier"]}}}}}]


def warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records
            if r.name == "budgetlens" and r.levelno == logging.WARNING]


async def send(url: str, data: dict[str, Any]) -> Any:
    return await litellm.acompletion(**data, api_base=url, api_key="test", num_retries=0)


@pytest.fixture
def no_callbacks() -> Iterator[None]:
    saved = list(litellm.callbacks)
    litellm.callbacks = []
    yield
    litellm.callbacks = saved


async def test_the_proxy_hook_clamps_and_keeps_tools(no_callbacks: None,
                                                     caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, "budgetlens")
    data = {"model": "openai/gpt-4o", "messages": SHORT, "max_tokens": 4000, "tools": TOOLS}
    with loopback_server() as server:
        with pytest.raises(litellm.BadRequestError, match="maximum context length"):
            await send(server.base_url, copy.deepcopy(data))
        fitted = await BudgetGuard(serving=SERVING).async_pre_call_hook(
            None, None, copy.deepcopy(data), "completion")
        reply = await send(server.base_url, fitted)
    assert server.statuses == [400, 200]
    sent = json.loads(server.bodies[1])
    prompt = reply.usage.prompt_tokens
    assert prompt > tokens(SHORT)  # the tools cost tokens too
    assert sent["max_tokens"] == fitted["max_tokens"] == WINDOW - prompt
    assert sent["tools"] == TOOLS
    [warning] = warnings(caplog)
    assert f"max_tokens clamped from 4,000 to {WINDOW - prompt:,}" in warning


async def test_the_proxy_hook_passes_a_fitting_request_as_it_is(no_callbacks: None) -> None:
    data = {"model": "openai/gpt-4o", "messages": SHORT, "max_tokens": 1000}
    with loopback_server() as server:
        await send(server.base_url, copy.deepcopy(data))
        hooked = copy.deepcopy(data)
        fitted = await BudgetGuard(serving=SERVING).async_pre_call_hook(
            None, None, hooked, "completion")
        assert fitted == data
        await send(server.base_url, fitted)
    assert server.statuses == [200, 200]
    assert server.bodies[1] == server.bodies[0]


async def test_the_proxy_hook_refuses_before_sending() -> None:
    guard = BudgetGuard(serving=SERVING)
    with pytest.raises(RequestDoesNotFit):
        await guard.async_pre_call_hook(None, None, {"model": "openai/gpt-4o",
                                                     "messages": HUGE_QUESTION}, "completion")
    data = {"model": "openai/gpt-4o", "messages": HUGE_QUESTION}
    assert await guard.async_pre_call_hook(None, None, data, "embeddings") is data


async def test_registered_as_a_callback_it_trims_each_sdk_request(
        no_callbacks: None, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, "budgetlens")
    with loopback_server() as server:
        await send(server.base_url, {"model": "openai/gpt-4o", "messages": SHORT,
                                     "max_tokens": 1000})
        litellm.callbacks = [BudgetGuard(serving=SERVING)]
        await send(server.base_url, {"model": "openai/gpt-4o", "messages": SHORT,
                                     "max_tokens": 1000})
        await send(server.base_url, {"model": "openai/gpt-4o", "messages": LONG})
        with pytest.raises(RequestDoesNotFit):
            await send(server.base_url, {"model": "openai/gpt-4o",
                                         "messages": HUGE_QUESTION})
    assert server.statuses == [200, 200, 200]
    assert server.bodies[1] == server.bodies[0]
    sent = json.loads(server.bodies[2])["messages"]
    assert sent[0] == LONG[0] and sent[-1] == LONG[-1] and len(sent) < len(LONG)
    assert tokens(sent) < WINDOW
    assert any("history trimmed" in w for w in warnings(caplog))


def _responses(messages: list[dict[str, Any]], **more: Any) -> dict[str, Any]:
    """A Responses API call's data: the system prompt as ``instructions``, the rest as
    ``input`` items."""
    return {"model": "openai/gpt-4o", "instructions": messages[0]["content"],
            "input": messages[1:], **more}


def approx_room(prompt: int) -> int:
    """A Responses count is ≈ (no published rule): the window less the prompt and its
    margin, 12% of it rounded up plus 128."""
    return WINDOW - prompt - (-(-prompt * 12 // 100) + 128)


async def send_responses(url: str, data: dict[str, Any]) -> Any:
    return await litellm.aresponses(**data, api_base=url, api_key="test", num_retries=0)


async def test_the_proxy_hook_fits_responses_calls(no_callbacks: None,
                                                   caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, "budgetlens")
    guard = BudgetGuard(serving=SERVING)
    with loopback_server() as server:
        with pytest.raises(litellm.BadRequestError):
            await send_responses(server.base_url, _responses(SHORT, max_output_tokens=4000))
        fitted = await guard.async_pre_call_hook(
            None, None, _responses(SHORT, max_output_tokens=4000), "aresponses")
        reply = await send_responses(server.base_url, fitted)
        trimmed = await guard.async_pre_call_hook(None, None, _responses(LONG), "aresponses")
        await send_responses(server.base_url, trimmed)
    assert server.statuses == [400, 200, 200]
    prompt = reply.usage.input_tokens
    assert json.loads(server.bodies[1])["max_output_tokens"] == approx_room(prompt)
    assert fitted["max_output_tokens"] == approx_room(prompt)
    kept = json.loads(server.bodies[2])["input"]
    assert kept[-1] == LONG[-1] and kept == LONG[len(LONG) - len(kept):]
    assert len(kept) < len(LONG) - 1
    logged = warnings(caplog)
    assert any(f"max_output_tokens clamped from 4,000 to {approx_room(prompt):,}" in w
               for w in logged)
    assert any("history trimmed" in w for w in logged)


async def test_a_fitting_responses_call_is_passed_as_it_is_and_a_huge_one_refused() -> None:
    guard = BudgetGuard(serving=SERVING)
    data = _responses(SHORT, max_output_tokens=1000)
    before = copy.deepcopy(data)
    assert await guard.async_pre_call_hook(None, None, data, "responses") is data
    assert data == before
    with pytest.raises(RequestDoesNotFit) as refused:
        await guard.async_pre_call_hook(None, None, _responses(HUGE_QUESTION), "aresponses")
    assert getattr(refused.value, "param", None) == "input"
    assert getattr(refused.value, "status_code", None) == 400
