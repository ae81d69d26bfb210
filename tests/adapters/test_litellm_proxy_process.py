"""The LiteLLM adapter inside a real LiteLLM proxy: the ``litellm --config`` command line run
as a process on 127.0.0.1, with ``BudgetGuard`` named in its config
(``litellm_settings: callbacks: budget_guard.guard``) and the loopback server (window 4,096,
vLLM's refusals) as its upstream model. A client speaks to the proxy with the OpenAI SDK:
a fitting request is passed through, one over the window is clamped or trimmed, and one
nothing makes fit is refused by the proxy (HTTP 400, ``invalid_request_error``) before
anything goes upstream. Responses calls (``/v1/responses``) are clamped and refused alike.

``litellm[proxy]`` itself does not install here: it pins ``litellm-proxy``, which the package
index does not have. The proxy's code ships in ``litellm``; the modules it imports at start
(``PROXY_MODULES``) are in the ``test`` extra. Without them this test is skipped.
"""

from __future__ import annotations

import importlib.util
import json
import os
import secrets
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

openai = pytest.importorskip("openai")
PROXY_MODULES = ["litellm", "fastapi", "backoff", "apscheduler", "redis", "semver",
                 "expression", "fastapi_sso", "soundfile", "uvloop", "nacl"]
LITELLM = Path(sys.executable).parent / "litellm"
if not LITELLM.exists() or any(importlib.util.find_spec(m) is None for m in PROXY_MODULES):
    pytest.skip("the litellm proxy's modules are not installed", allow_module_level=True)

from tests.adapters.conversation import (  # noqa: E402
    HUGE_QUESTION,
    LONG,
    SHORT,
    WINDOW,
    tokens,
)
from tests.request_server import REPLY, LoopbackServer, loopback_server  # noqa: E402

GUARD_MODULE = f"""\
from budgetlens_adapters.litellm_proxy import BudgetGuard

guard = BudgetGuard(model="gpt-4o", serving={{"max_model_len": {WINDOW}}})
"""

CONFIG = """\
model_list:
  - model_name: parcel-bot
    litellm_params:
      model: openai/gpt-4o
      api_base: {url}
      api_key: upstream-key
litellm_settings:
  callbacks: budget_guard.guard
general_settings:
  master_key: {key}
"""


@dataclass
class Proxy:
    url: str
    key: str
    upstream: LoopbackServer
    output: list[str] = field(default_factory=list)

    def client(self) -> Any:
        return openai.OpenAI(base_url=self.url, api_key=self.key, max_retries=0)


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.fixture(scope="module")
def proxy(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Proxy]:
    folder = tmp_path_factory.mktemp("litellm_proxy")
    key = "sk-" + secrets.token_hex(24)  # the proxy refuses to start without a master key
    (folder / "budget_guard.py").write_text(GUARD_MODULE, "utf-8")
    port = _free_port()
    env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True", "PYTHONUNBUFFERED": "1"}
    with loopback_server(max_requests=50) as upstream:
        (folder / "config.yaml").write_text(CONFIG.format(url=upstream.base_url, key=key), "utf-8")
        process = subprocess.Popen(
            [str(LITELLM), "--config", str(folder / "config.yaml"), "--host", "127.0.0.1",
             "--port", str(port)], cwd=folder, env=env, stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT, text=True)
        running = Proxy(f"http://127.0.0.1:{port}/v1", key, upstream)
        assert process.stdout is not None
        for line in process.stdout:  # until the proxy listens (or exits: then it failed)
            running.output.append(line)
            if "Uvicorn running on" in line:
                break
        if process.poll() is not None:
            pytest.fail("the litellm proxy did not start:\n" + "".join(running.output[-40:]))
        drain = threading.Thread(target=running.output.extend, args=(process.stdout,),
                                 daemon=True)
        drain.start()
        try:
            yield running
        finally:
            process.terminate()
            process.wait()
            drain.join()


def sent(proxy: Proxy) -> dict[str, Any]:
    """The last body the upstream server received."""
    return dict(json.loads(proxy.upstream.bodies[-1]))


def test_a_fitting_request_passes_through_the_proxy_unchanged(proxy: Proxy) -> None:
    before = len(proxy.upstream.bodies)
    reply = proxy.client().chat.completions.create(model="parcel-bot", messages=SHORT,
                                                   max_tokens=1000)
    assert reply.choices[0].message.content == REPLY
    assert len(proxy.upstream.bodies) == before + 1
    body = sent(proxy)
    assert body["messages"] == SHORT and body["max_tokens"] == 1000
    assert reply.usage.prompt_tokens == tokens(SHORT)


def test_an_output_limit_over_the_window_is_clamped_in_the_proxy(proxy: Proxy) -> None:
    reply = proxy.client().chat.completions.create(model="parcel-bot", messages=SHORT,
                                                   max_tokens=4000)
    assert reply.choices[0].message.content == REPLY
    assert proxy.upstream.statuses[-1] == 200
    body = sent(proxy)
    assert body["messages"] == SHORT
    assert body["max_tokens"] == WINDOW - tokens(SHORT)
    clamp = f"gpt-4o: max_tokens clamped from 4,000 to {WINDOW - tokens(SHORT):,}"
    assert any(clamp in line for line in proxy.output)  # the warning, in the proxy's log


def test_history_over_the_window_is_trimmed_in_the_proxy(proxy: Proxy) -> None:
    proxy.client().chat.completions.create(model="parcel-bot", messages=LONG)
    assert proxy.upstream.statuses[-1] == 200
    kept = sent(proxy)["messages"]
    assert kept[0] == LONG[0] and kept[-1] == LONG[-1] and len(kept) < len(LONG)
    assert kept[1:-1] == LONG[len(LONG) - len(kept) + 1:-1]
    assert tokens(kept) < WINDOW


def test_a_request_nothing_makes_fit_is_refused_by_the_proxy(proxy: Proxy) -> None:
    before = len(proxy.upstream.bodies)
    with pytest.raises(openai.BadRequestError) as refused:
        proxy.client().chat.completions.create(model="parcel-bot", messages=HUGE_QUESTION,
                                               max_tokens=500)
    assert refused.value.status_code == 400
    error = refused.value.body  # the proxy's error: its code is the HTTP status
    assert (error["type"], error["param"], error["code"]) == (
        "invalid_request_error", "messages", "400")
    assert error["message"].startswith("gpt-4o: the request does not fit")
    assert len(proxy.upstream.bodies) == before  # nothing went upstream


def _room(prompt: int) -> int:
    """A Responses count is ≈: the window less the prompt and 12% of it (rounded up) + 128."""
    return WINDOW - prompt - (-(-prompt * 12 // 100) + 128)


def test_a_responses_call_is_clamped_in_the_proxy(proxy: Proxy) -> None:
    reply = proxy.client().responses.create(model="parcel-bot",
                                            instructions=SHORT[0]["content"],
                                            input=SHORT[1:], max_output_tokens=4000)
    assert reply.output_text == REPLY and proxy.upstream.statuses[-1] == 200
    body = sent(proxy)
    assert body["input"] == SHORT[1:]
    assert body["max_output_tokens"] == _room(reply.usage.input_tokens)
    clamp = f"max_output_tokens clamped from 4,000 to {_room(reply.usage.input_tokens):,}"
    assert any(clamp in line for line in proxy.output)


def test_a_responses_call_nothing_makes_fit_is_refused_by_the_proxy(proxy: Proxy) -> None:
    before = len(proxy.upstream.bodies)
    with pytest.raises(openai.BadRequestError) as refused:
        proxy.client().responses.create(model="parcel-bot", input=HUGE_QUESTION[1:],
                                        max_output_tokens=500)
    error = refused.value.body
    assert (error["type"], error["param"]) == ("invalid_request_error", "input")
    assert len(proxy.upstream.bodies) == before  # nothing went upstream
