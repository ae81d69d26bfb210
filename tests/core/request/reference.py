"""The counting rules of OpenAI's cookbook "How to count tokens with tiktoken", written out
here with plain tiktoken (over the rank files budgetlens ships, built here, not by
budgetlens): the independent reference the request counts are compared with."""

from __future__ import annotations

import base64
import json
from functools import cache
from pathlib import Path
from typing import Any

import tiktoken

from budgetlens.tokens import core

ENCODINGS = Path(core.__file__).resolve().parent / "encodings"


@cache
def encoding(name: str) -> tiktoken.Encoding:
    meta = json.loads((ENCODINGS / "encodings.json").read_text("utf-8"))["encodings"][name]
    ranks = {}
    for line in (ENCODINGS / meta["file"]).read_text("ascii").split("\n"):
        if line:
            token, rank = line.split(" ")
            ranks[base64.b64decode(token)] = int(rank)
    return tiktoken.Encoding(name=f"reference-{name}", pat_str=meta["pat_str"],
                             mergeable_ranks=ranks, special_tokens=meta["special_tokens"])


def n(text: str, enc: tiktoken.Encoding) -> int:
    return len(enc.encode(text, disallowed_special=()))


def messages_tokens(messages: list[dict[str, Any]], enc: tiktoken.Encoding) -> int:
    """Section 6, num_tokens_from_messages: 3 per message, every string value encoded, +1
    for a name, 3 to prime the reply. Extended as budgetlens documents: a content list
    counts its text parts; each tool call 3 + its name + its arguments (≈)."""
    total = 0
    for message in messages:
        total += 3
        for key, value in message.items():
            if isinstance(value, str):
                total += n(value, enc)
                if key == "name":
                    total += 1
            elif key == "content" and isinstance(value, list):
                total += sum(n(part["text"], enc) for part in value if part["type"] == "text")
            elif key == "tool_calls":
                for call in value:
                    total += 3 + n(call["function"]["name"], enc) + \
                        n(call["function"]["arguments"], enc)
    return total + 3


def tools_tokens(functions: list[dict[str, Any]], enc: tiktoken.Encoding,
                 func_init: int) -> int:
    """Section 7, num_tokens_for_tools (its tools part), as the cookbook writes it."""
    prop_init, prop_key, enum_init, enum_item, func_end = 3, 3, -3, 3, 12
    count = 0
    if len(functions) > 0:
        for f in functions:
            count += func_init
            function = f["function"]
            f_desc = function["description"]
            if f_desc.endswith("."):
                f_desc = f_desc[:-1]
            count += n(function["name"] + ":" + f_desc, enc)
            if len(function["parameters"]["properties"]) > 0:
                count += prop_init
                for key, prop in function["parameters"]["properties"].items():
                    count += prop_key
                    if "enum" in prop:
                        count += enum_init
                        for item in prop["enum"]:
                            count += enum_item
                            count += n(item, enc)
                    p_desc = prop["description"]
                    if p_desc.endswith("."):
                        p_desc = p_desc[:-1]
                    count += n(f"{key}:{prop['type']}:{p_desc}", enc)
        count += func_end
    return count
