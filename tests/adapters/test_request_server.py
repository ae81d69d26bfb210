"""The loopback server refuses what vLLM and llama.cpp refuse, with their error text, and
answers the rest; its count is the cookbook's, computed here by hand for a small chat."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from typing import Any

import pytest

from tests.core.request.reference import encoding
from tests.request_server import loopback_server


def post(url: str, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    request = urllib.request.Request(f"{url}/chat/completions", json.dumps(body).encode(),
                                     {"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request) as answer:
            return answer.status, json.loads(answer.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


def test_the_count_is_the_cookbooks_and_the_window_is_enforced_like_vllm() -> None:
    enc = encoding("o200k_base")
    messages = [{"role": "system", "content": "Be brief."},
                {"role": "user", "content": "Hello there", "name": "ann"}]
    # by hand: 3 + system + "Be brief." / 3 + user + "Hello there" + ann + 1 / 3 priming
    by_hand = (3 + len(enc.encode("system")) + len(enc.encode("Be brief."))
               + 3 + len(enc.encode("user")) + len(enc.encode("Hello there"))
               + len(enc.encode("ann")) + 1 + 3)
    with loopback_server(window=by_hand + 10) as server:
        status, ok = post(server.base_url, {"model": "m", "messages": messages,
                                            "max_tokens": 10})
        assert status == 200
        assert ok["usage"]["prompt_tokens"] == by_hand
        assert ok["choices"][0]["finish_reason"] in ("stop", "length")
        status, refused = post(server.base_url, {"model": "m", "messages": messages,
                                                 "max_tokens": 11})
    assert status == 400
    assert refused["message"] == (
        f"This model's maximum context length is {by_hand + 10} tokens. However, you requested"
        f" {by_hand + 11} tokens ({by_hand} in the messages, 11 in the completion). Please"
        " reduce the length of the messages or completion.")
    assert server.statuses == [200, 400] and len(server.bodies) == 2


@pytest.mark.parametrize("window", [5, 200])
def test_llamacpp_refuses_a_prompt_that_fills_its_context(window: int) -> None:
    messages = [{"role": "user", "content": "one two three four five six"}]
    with loopback_server(window=window, flavor="llamacpp") as server:
        status, answer = post(server.base_url, {"model": "m", "messages": messages,
                                                "max_tokens": 1000})
    if window == 5:
        assert status == 400
        assert answer["error"]["type"] == "exceed_context_size_error"
        assert "the request exceeds the available context size" in answer["error"]["message"]
    else:
        assert status == 200


def test_the_request_count_is_bounded() -> None:
    with loopback_server(max_requests=1) as server:
        body = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
        assert post(server.base_url, body)[0] == 200
        assert post(server.base_url, body)[0] == 429
    assert len(server.bodies) == 1


def test_responses_are_counted_as_their_chat_and_refused_as_openai_refuses() -> None:
    enc = encoding("o200k_base")
    body = {"model": "m", "instructions": "Be brief.", "input": "Hello there",
            "tools": [{"type": "function", "name": "f", "description": "Find it.",
                       "parameters": {"type": "object", "properties": {
                           "q": {"type": "string", "description": "What."}}}}]}
    # by hand: 3 + system + "Be brief." / 3 + user + "Hello there" / 3 priming; the tool:
    # 7 + "f:Find it" + 3 (properties) + 3 + "q:string:What" + 12
    by_hand = (3 + len(enc.encode("system")) + len(enc.encode("Be brief."))
               + 3 + len(enc.encode("user")) + len(enc.encode("Hello there")) + 3
               + 7 + len(enc.encode("f:Find it")) + 3 + 3 + len(enc.encode("q:string:What"))
               + 12)
    with loopback_server(window=by_hand + 10) as server:
        status, ok = post_to(server.base_url, "responses", {**body, "max_output_tokens": 10})
        assert status == 200
        assert ok["usage"]["input_tokens"] == by_hand
        assert ok["output"][0]["content"][0]["type"] == "output_text"
        status, refused = post_to(server.base_url, "responses",
                                  {**body, "max_output_tokens": 11})
    assert status == 400
    assert refused["error"] == {
        "message": "Your input exceeds the context window of this model. Please adjust your"
        " input and try again.", "type": "invalid_request_error", "param": "input",
        "code": "context_length_exceeded"}


def post_to(url: str, route: str, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    request = urllib.request.Request(f"{url}/{route}", json.dumps(body).encode(),
                                     {"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request) as answer:
            return answer.status, json.loads(answer.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())
