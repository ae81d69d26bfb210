"""A local OpenAI-compatible chat server on 127.0.0.1 that enforces a context window the way
vLLM and llama.cpp do, for the request-time adapters' tests (issue 34).

It counts the prompt on its own, with tiktoken directly (over the rank files budgetlens
ships, loaded by tests/core/request/reference.py), by the rules of OpenAI's cookbook
"How to count tokens with tiktoken" (``num_tokens_from_messages`` and
``num_tokens_for_tools`` for gpt-4o), written out here and not taken from budgetlens:

- 3 tokens per message, the tokens of each of its string values (the role too), 1 more for a
  ``name``, 3 to prime the reply;
- tool definitions: 7 per function, ``name:description`` (a final period dropped), 3 when it
  has properties, 3 per property and ``key:type:description``, 12 at the end.

``POST /v1/chat/completions``:

- ``flavor="vllm"`` refuses prompt + ``max_tokens`` (or ``max_completion_tokens``) over the
  window with HTTP 400 and vLLM's text ("This model's maximum context length is ...");
  without an output limit, only a prompt over the window is refused;
- ``flavor="llamacpp"`` refuses a prompt that fills the window (``n_ctx``) with HTTP 400 and
  llama.cpp's ``exceed_context_size_error`` ("the request exceeds the available context
  size ..."); llama.cpp stops a reply at the window instead of refusing ``max_tokens``;
- otherwise it answers a ``chat.completion`` with ``usage`` and ``finish_reason``.

``POST /v1/responses`` (the Responses API) answers as OpenAI does. Its input is counted by
the same rules, as the chat it stands for: ``instructions`` a system message, a string
``input`` a user message, each input message item a message (its text parts joined); a
``function`` tool (flat in this API) by the tool rule; a ``text.format`` JSON schema as one
more function definition (OpenAI publishes no rule for either; this is the server's own).
Input + ``max_output_tokens`` over the window is refused with HTTP 400 and OpenAI's
``context_length_exceeded`` error ("Your input exceeds the context window of this model.
..."); otherwise a ``response`` with ``usage.input_tokens`` is answered. A chat
``response_format`` JSON schema is counted the same way, and a request for JSON gets the
reply as ``{"answer": ...}``; a chat request whose ``tool_choice`` requires a tool
gets a call of it, ``REPLY`` as each required argument.

Every request's raw body is kept (``bodies``), so a test can compare the bytes a client sent.
The server binds port 0, serves in a thread and stops on leaving the ``with`` block; it
answers at most ``max_requests`` requests (more is a 429), so a runaway client cannot spin.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from tests.core.request.reference import encoding as _encoding

REPLY = "Your parcel arrives tomorrow."


def cookbook_message_tokens(messages: list[dict[str, Any]], encoding: str = "o200k_base") -> int:
    """The cookbook's ``num_tokens_from_messages`` for gpt-4o (a list of text parts counts
    as its texts)."""
    enc = _encoding(encoding)
    n = 0
    for message in messages:
        n += 3
        for key, value in message.items():
            if isinstance(value, list):
                value = "".join(p.get("text", "") for p in value if isinstance(p, dict))
            if not isinstance(value, str):
                continue
            n += len(enc.encode(value))
            if key == "name":
                n += 1
    return n + 3


def cookbook_tool_tokens(tools: list[dict[str, Any]], encoding: str = "o200k_base") -> int:
    """The cookbook's ``num_tokens_for_tools`` (its gpt-4o constants), tools only."""
    if not tools:
        return 0
    enc = _encoding(encoding)
    n = 0
    for tool in tools:
        function = tool["function"]
        n += 7
        desc = function.get("description", "").removesuffix(".")
        n += len(enc.encode(f"{function['name']}:{desc}"))
        properties = function.get("parameters", {}).get("properties", {})
        if properties:
            n += 3
            for key, prop in properties.items():
                n += 3
                if "enum" in prop:
                    n -= 3
                    for item in prop["enum"]:
                        n += 3 + len(enc.encode(item))
                p_desc = prop.get("description", "").removesuffix(".")
                n += len(enc.encode(f"{key}:{prop['type']}:{p_desc}"))
    return n + 12


def schema_tokens(fmt: Any, encoding: str = "o200k_base") -> int:
    """A JSON schema response format (chat's ``response_format`` or the Responses API's
    ``text.format``) counted as one function definition of the tool rule."""
    if not isinstance(fmt, dict) or fmt.get("type") != "json_schema":
        return 0
    spec = fmt.get("json_schema", fmt)
    return cookbook_tool_tokens([{"type": "function", "function": {
        "name": spec.get("name", ""), "description": spec.get("description", ""),
        "parameters": spec.get("schema", {})}}], encoding)


def prompt_tokens(body: dict[str, Any], encoding: str = "o200k_base") -> int:
    return (cookbook_message_tokens(body["messages"], encoding)
            + cookbook_tool_tokens(body.get("tools") or [], encoding)
            + schema_tokens(body.get("response_format"), encoding))


def responses_messages(body: dict[str, Any]) -> list[dict[str, Any]]:
    """The chat a Responses API request stands for: ``instructions`` a system message, a
    string ``input`` a user message, each message item a message (its text parts joined);
    other items (function calls, their outputs, reasoning) are not counted here."""
    messages = []
    if isinstance(body.get("instructions"), str):
        messages.append({"role": "system", "content": body["instructions"]})
    items = body.get("input") or []
    for item in [{"role": "user", "content": items}] if isinstance(items, str) else items:
        if item.get("type", "message") != "message":
            continue
        content = item["content"]
        if isinstance(content, list):
            content = "".join(part.get("text", "") for part in content)
        messages.append({"role": item["role"], "content": content})
    return messages


def responses_input_tokens(body: dict[str, Any], encoding: str = "o200k_base") -> int:
    """The input tokens of a Responses API request (module docstring)."""
    tools = [{"type": "function", "function": t} for t in body.get("tools") or []
             if t.get("type") == "function"]
    return (cookbook_message_tokens(responses_messages(body), encoding)
            + cookbook_tool_tokens(tools, encoding)
            + schema_tokens((body.get("text") or {}).get("format"), encoding))


@dataclass
class LoopbackServer:
    """What a test sees: the address, the window, the bodies received, the answers given."""

    window: int
    flavor: str
    max_requests: int
    port: int = 0
    bodies: list[bytes] = field(default_factory=list)
    statuses: list[int] = field(default_factory=list)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def answer(self, raw: bytes, route: str = "chat") -> tuple[int, dict[str, Any]]:
        if len(self.bodies) >= self.max_requests:
            return 429, {"error": {"message": "request limit of the test server reached"}}
        self.bodies.append(raw)
        body = json.loads(raw)
        if route == "responses":
            return self.respond(body)
        prompt = prompt_tokens(body)
        limit = body.get("max_completion_tokens", body.get("max_tokens"))
        refusal = (_vllm_refusal(self.window, prompt, limit) if self.flavor == "vllm"
                   else _llamacpp_refusal(self.window, prompt))
        if refusal is not None:
            self.statuses.append(400)
            return 400, refusal
        self.statuses.append(200)
        return 200, _completion(body, prompt, limit)


    def respond(self, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        """``POST /v1/responses``: OpenAI's refusal, or a ``response``."""
        prompt = responses_input_tokens(body)
        limit = body.get("max_output_tokens")
        if prompt >= self.window or prompt + (limit or 0) > self.window:
            self.statuses.append(400)
            return 400, {"error": {"message": "Your input exceeds the context window of this"
                                   " model. Please adjust your input and try again.",
                                   "type": "invalid_request_error", "param": "input",
                                   "code": "context_length_exceeded"}}
        self.statuses.append(200)
        wants_json = ((body.get("text") or {}).get("format") or {}).get("type") == "json_schema"
        text, n, cut = _reply(wants_json, limit)
        return 200, {
            "id": f"resp_{prompt}", "object": "response", "created_at": 0,
            "model": body.get("model", ""), "status": "incomplete" if cut else "completed",
            "incomplete_details": {"reason": "max_output_tokens"} if cut else None,
            "error": None, "instructions": body.get("instructions"), "metadata": {},
            "parallel_tool_calls": True, "tool_choice": "auto", "tools": [],
            "temperature": 1.0, "top_p": 1.0,
            "output": [{"type": "message", "id": "msg_1", "status": "completed",
                        "role": "assistant", "content": [
                            {"type": "output_text", "text": text, "annotations": []}]}],
            "usage": {"input_tokens": prompt, "input_tokens_details": {"cached_tokens": 0},
                      "output_tokens": n, "output_tokens_details": {"reasoning_tokens": 0},
                      "total_tokens": prompt + n}}


def _reply(wants_json: bool, limit: int | None) -> tuple[str, int, bool]:
    """The reply's text (``{"answer": REPLY}`` when JSON is asked for), its tokens, and
    whether ``limit`` cut it."""
    enc = _encoding("o200k_base")
    reply = enc.encode(json.dumps({"answer": REPLY}) if wants_json else REPLY)
    cut = limit is not None and limit < len(reply)
    tokens = reply[:limit] if cut else reply
    return enc.decode(tokens), len(tokens), cut


def _vllm_refusal(window: int, prompt: int, limit: int | None) -> dict[str, Any] | None:
    wanted = prompt + (limit or 0)
    if wanted <= window and prompt < window:
        return None
    message = (f"This model's maximum context length is {window} tokens. However, you "
               f"requested {wanted} tokens ({prompt} in the messages, {limit or 0} in the "
               f"completion). Please reduce the length of the messages or completion.")
    return {"object": "error", "message": message, "type": "BadRequestError", "param": None,
            "code": 400}


def _llamacpp_refusal(window: int, prompt: int) -> dict[str, Any] | None:
    if prompt < window:
        return None
    return {"error": {"code": 400, "message": "the request exceeds the available context size,"
                      " try increasing it", "type": "exceed_context_size_error",
                      "n_prompt_tokens": prompt, "n_ctx": window}}


def _tool_call(body: dict[str, Any], prompt: int) -> dict[str, Any] | None:
    """When a tool call is required (``tool_choice``: ``required`` or a function), the
    call of that tool (else the first) with ``REPLY`` as each required argument."""
    choice, tools = body.get("tool_choice"), body.get("tools") or []
    if not tools or choice in (None, "auto", "none"):
        return None
    named = choice.get("function", {}).get("name") if isinstance(choice, dict) else None
    function = next((t["function"] for t in tools if t["function"]["name"] == named),
                    tools[0]["function"])
    required = function.get("parameters", {}).get("required", [])
    arguments = json.dumps({key: REPLY for key in required})
    n = len(_encoding("o200k_base").encode(arguments))
    return {"id": f"chatcmpl-{prompt}", "object": "chat.completion", "created": 0,
            "model": body.get("model", ""),
            "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {
                "role": "assistant", "content": None, "tool_calls": [{
                    "id": "call_1", "type": "function",
                    "function": {"name": function["name"], "arguments": arguments}}]}}],
            "usage": {"prompt_tokens": prompt, "completion_tokens": n,
                      "total_tokens": prompt + n}}


def _completion(body: dict[str, Any], prompt: int, limit: int | None) -> dict[str, Any]:
    call = _tool_call(body, prompt)
    if call is not None:
        return call
    wants_json = (body.get("response_format") or {}).get("type") in ("json_schema",
                                                                     "json_object")
    text, n, cut = _reply(wants_json, limit)
    return {"id": f"chatcmpl-{prompt}", "object": "chat.completion", "created": 0,
            "model": body.get("model", ""),
            "choices": [{"index": 0, "finish_reason": "length" if cut else "stop",
                         "message": {"role": "assistant", "content": text}}],
            "usage": {"prompt_tokens": prompt, "completion_tokens": n,
                      "total_tokens": prompt + n}}


_ROUTES = {"/v1/chat/completions": "chat", "/v1/responses": "responses"}


def _handler(state: LoopbackServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self) -> None:
            raw = self.rfile.read(int(self.headers.get("Content-Length", "0")))
            route = _ROUTES.get(self.path.rstrip("/"))
            if route is None:
                status, answer = 404, {"error": {"message": f"no route {self.path}"}}
            else:
                status, answer = state.answer(raw, route)
            data = json.dumps(answer).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, format: str, *args: Any) -> None:  # quiet
            pass

    return Handler


@contextmanager
def loopback_server(window: int = 4096, flavor: str = "vllm",
                    max_requests: int = 20) -> Iterator[LoopbackServer]:
    """A running server on 127.0.0.1 (port 0: the system picks a free one), stopped after."""
    state = LoopbackServer(window, flavor, max_requests)
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _handler(state))
    httpd.daemon_threads = True
    state.port = httpd.server_address[1]
    thread = threading.Thread(target=httpd.serve_forever, name="loopback-llm", daemon=True)
    thread.start()
    try:
        yield state
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join()
