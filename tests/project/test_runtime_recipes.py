"""docs/runtime.md section 6: each adapter's recipe runs as it is, against the loopback
server (tests/request_server.py: window 4,096, vLLM's refusals), and its request goes out
clamped to the window, with the clamp logged."""

from __future__ import annotations

import contextlib
import io
import json
import logging
import os
import re
from pathlib import Path

import pytest

from tests.request_server import REPLY, loopback_server, prompt_tokens

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # no price list download

ROOT = Path(__file__).resolve().parents[2]
SECTION = (ROOT / "docs/runtime.md").read_text("utf-8").split("## 6. Adapters", 1)[1]
RECIPES = re.findall(r"```python recipe\n(.*?)```", SECTION, re.S)
DOC_URL = "http://127.0.0.1:8000/v1"
NEEDS = {"openai_sdk": ["openai"], "litellm_proxy": ["litellm"],
         "langchain_agent": ["langchain", "langchain_openai"]}


def test_there_is_one_recipe_per_adapter() -> None:
    assert [re.search(r"budgetlens_adapters\.(\w+)", r).group(1)  # type: ignore[union-attr]
            for r in RECIPES] == list(NEEDS)
    assert all(r.count(DOC_URL) == 1 for r in RECIPES)


@pytest.mark.parametrize("index", range(len(NEEDS)), ids=list(NEEDS))
def test_the_recipe_runs_and_clamps_its_request(index: int,
                                                caplog: pytest.LogCaptureFixture) -> None:
    for module in list(NEEDS.values())[index]:
        pytest.importorskip(module)
    if index == 1:  # the recipe sets litellm.callbacks: put them back after
        import litellm
        saved = list(litellm.callbacks)
    caplog.set_level(logging.WARNING, "budgetlens")
    out = io.StringIO()
    try:
        with loopback_server() as server, contextlib.redirect_stdout(out):
            code = RECIPES[index].replace(DOC_URL, server.base_url)
            exec(compile(code, "docs/runtime.md", "exec"), {"__name__": "recipe"})
    finally:
        if index == 1:
            litellm.callbacks = saved
    assert out.getvalue() == REPLY + "\n"
    assert server.statuses == [200]
    sent = json.loads(server.bodies[0])
    limit = sent.get("max_completion_tokens", sent.get("max_tokens"))
    assert limit == 4096 - prompt_tokens(sent)
    [warning] = [r.getMessage() for r in caplog.records if r.name == "budgetlens"]
    assert f"clamped from 4,000 to {limit:,}" in warning
