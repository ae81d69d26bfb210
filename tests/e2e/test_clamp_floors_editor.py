"""Over LSP: a step that fits only below the clamp's floors is BL052 on the pipeline and on
its prompt file, with no clamp offered. Numbers by hand from the contract (expected.py)."""

from __future__ import annotations

from pathlib import Path

from . import expected
from .harness import codes_of, running_server


async def test_a_prompt_that_leaves_no_room_above_the_floors_is_bl052(workspace: Path) -> None:
    prompt = (workspace / "prompts/chat.txt").read_text("utf-8")
    bigger = prompt + "Remember: " + "be concise and kind. " * 900
    (workspace / "prompts/chat.txt").write_text(bigger, "utf-8")
    # chat.yaml, step chat: history 1536 (its settings), context 4096 (base.yaml; floor half:
    # 2048), output 768 (max_tokens; floor half: 384), template "{message}" emptied to ""
    system = expected.tokens(bigger)
    fixed = system + expected.tokens("") + expected.OVERHEAD
    # it would fit with context 0 and output 1 (the only BL052 there used to be) ...
    assert fixed + 1536 + expected.MARGIN + 1 <= expected.WINDOW
    # ... but not with the context and the output at their floors
    at_floors = fixed + 1536 + 2048 + 384 + expected.MARGIN
    assert at_floors > expected.WINDOW
    percent = (system * 100 + expected.WINDOW // 2) // expected.WINDOW  # rounded
    async with running_server(workspace) as ed:
        chat = ed.uri("pipelines/chat.yaml")
        diags = await ed.wait_diagnostics(chat, lambda ds: "BL052" in codes_of(ds))
        [d] = [x for x in diags if x.code == "BL052"]
        assert "BL050" not in codes_of(diags)
        assert f"= {at_floors} > {expected.WINDOW} (over by {at_floors - expected.WINDOW})" \
            in d.message
        assert (f"system prompt {system} is {percent}% of the {expected.WINDOW} window:"
                " shorten the system prompt chat.txt") in d.message
        [p] = await ed.wait_diagnostics(ed.uri("prompts/chat.txt"),
                                        lambda ds: "BL052" in codes_of(ds))
        assert "chat.yaml › chat" in p.message
