"""The chats the adapters' tests send, with their sizes computed by the loopback server's own
count (tiktoken and the cookbook's rules, tests/request_server.py), never by budgetlens."""

from __future__ import annotations

from typing import Any

from tests.request_server import prompt_tokens

WINDOW = 4096
SERVING = {"max_model_len": WINDOW}
SYSTEM = {"role": "system", "content": "You are the support assistant of a parcel service."}
QUESTION = {"role": "user", "content": "Can I change the delivery address?"}


def turn(n: int, words: int) -> list[dict[str, Any]]:
    """A user question and the assistant's answer, about ``words`` tokens each."""
    return [{"role": "user", "content": f"Where is parcel {1000 + n}? " + "please " * words},
            {"role": "assistant", "content": f"Parcel {1000 + n} is on its way. " +
             "soon " * words}]


def chat(turns: int, words: int = 300) -> list[dict[str, Any]]:
    return [SYSTEM, *(m for n in range(turns) for m in turn(n, words)), QUESTION]


def tokens(messages: list[dict[str, Any]]) -> int:
    return prompt_tokens({"messages": messages})


SHORT = chat(2)  # about 1,250 tokens: fits with max_tokens 1000, not with 4000
LONG = chat(8)  # about 4,900 tokens: over the window on its own
HUGE_QUESTION = [SYSTEM, {"role": "user", "content": "summarise this " * 3000}]


def check_sizes() -> None:
    assert 1000 < tokens(SHORT) < WINDOW - 1000 < tokens(SHORT) + 4000
    assert tokens(LONG) > WINDOW
    assert tokens(HUGE_QUESTION) > WINDOW
