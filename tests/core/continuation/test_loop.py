"""The continuation loop driven by scripted fake models."""

from __future__ import annotations

import asyncio
import json

import pytest

from budgetlens import (
    Case,
    ModelReplyError,
    Outcome,
    continue_json,
    continue_json_async,
    get_contexts,
)
from budgetlens.continuation.loop import (
    CONTINUATION_TEMPLATE,
    build_continuation_prompt,
)
from budgetlens.serialize import to_jsonable

DOC = ('{"title": "Quarterly report", "sections": [{"id": 1, "text": "Revenue grew in '
       'every region."}, {"id": 2, "text": "Costs fell by a tenth."}], "done": true}')


class Script:
    """A fake model: returns its replies in order and records the prompts it got."""

    def __init__(self, *replies: str) -> None:
        self.replies = list(replies)
        self.prompts: list[str] = []

    def __call__(self, prompt: str) -> str:
        self.prompts.append(prompt)
        if not self.replies:
            raise AssertionError("the loop called the model more often than scripted")
        return self.replies.pop(0)


def test_clean_three_part_continuation() -> None:
    a, b = 70, 120  # inside sections[0].text ("Revenue ") and sections[1].text ("Costs ")
    part1 = DOC[:a]
    part2 = DOC[a - 20:b]      # repeats 20 characters
    part3 = DOC[b - 30:]       # repeats 30 characters
    model = Script(part1, part2, part3)
    result = continue_json(model, "Write the report as JSON.")
    assert result.outcome is Outcome.COMPLETE
    assert result.text == DOC
    assert [it.case for it in result.iterations] == [Case.CONTINUE, Case.CONTINUE, Case.PARSED]
    assert model.prompts[0] == "Write the report as JSON."
    # the continuation prompts carry the overlap and the marked hierarchy of the cut so far
    second = model.prompts[1]
    assert second.startswith("Write the report as JSON.\n\n---\n")
    assert DOC[:a][-48:] in second
    assert "<<<CUT>>>" in second
    assert "cut inside a string at sections[0].text" in second
    merges = [it.merge for it in result.iterations]
    assert merges[0] is None
    assert merges[1] is not None and merges[1].overlap_length == 20
    assert merges[2] is not None and merges[2].overlap_length == 30


def test_reply_without_overlap_is_retried_with_the_same_prompt() -> None:
    a = 70
    model = Script(DOC[:a], "XYZ totally unrelated", DOC[a - 10:])
    result = continue_json(model, "p")
    assert result.outcome is Outcome.COMPLETE and result.text == DOC
    assert [it.case for it in result.iterations] == [Case.CONTINUE, Case.NO_OVERLAP,
                                                     Case.PARSED]
    assert model.prompts[1] == model.prompts[2]
    assert result.iterations[1].failures == 1


def test_reply_that_breaks_the_json_is_retried_and_the_base_is_kept() -> None:
    a = 70
    broken = DOC[a - 10:a] + 'x"}]]]] garbage'
    model = Script(DOC[:a], broken, DOC[a - 10:])
    result = continue_json(model, "p")
    assert result.text == DOC
    assert [it.case for it in result.iterations] == [Case.CONTINUE, Case.BROKEN, Case.PARSED]
    broken_it = result.iterations[1]
    assert broken_it.contexts is not None and broken_it.contexts.error is not None
    assert model.prompts[1] == model.prompts[2]


def test_three_failures_in_a_row_return_the_last_valid_closed_part() -> None:
    a = 70
    model = Script(DOC[:a], "no overlap 1", DOC[a - 5:a] + '"]]]', "no overlap 3", "unused")
    result = continue_json(model, "p")
    assert result.outcome is Outcome.FALLBACK_AFTER_FAILURES
    # DOC[:70] ends inside sections[0].text: closed by hand
    assert DOC[:a] == '{"title": "Quarterly report", "sections": [{"id": 1, "text": "Revenue '
    assert result.text == DOC[:a] + '"}]}'
    json.loads(result.text)
    assert [it.failures for it in result.iterations] == [0, 1, 2, 3]
    assert len(model.replies) == 1


def test_failures_only_count_in_a_row() -> None:
    a, b = 70, 120
    model = Script(DOC[:a], "nope", "nope again", DOC[a - 10:b], "nope", "nope",
                   DOC[b - 10:])
    result = continue_json(model, "p")
    assert result.outcome is Outcome.COMPLETE and result.text == DOC


def test_model_that_restarts_from_the_top() -> None:
    a = 70
    model = Script(DOC[:a], DOC[:100], DOC[90:])
    result = continue_json(model, "p")
    # DOC[:100] repeats all of the base: plain overlap
    assert result.text == DOC
    rewritten = DOC.replace("Quarterly report", "Quarterly report (v2)")
    model = Script(DOC[:a], "```json\n" + rewritten[:110], rewritten[100:])
    result = continue_json(model, "p")
    assert result.outcome is Outcome.COMPLETE
    assert result.text == rewritten
    restarted = result.iterations[1]
    assert restarted.merge is not None and restarted.merge.restarted
    assert restarted.case is Case.CONTINUE
    assert "restarted" in restarted.note


def test_complete_first_reply_with_prose_and_fence() -> None:
    model = Script("Here you go:\n```json\n" + DOC + "\n```")
    result = continue_json(model, "p")
    assert result.outcome is Outcome.COMPLETE
    assert result.text == DOC
    assert result.iterations[0].case is Case.COMPLETE


def test_nothing_valid_ever() -> None:
    model = Script("Sorry.", "Still no.", "No.")
    result = continue_json(model, "p")
    assert result.outcome is Outcome.NO_VALID_JSON and result.text == ""


def test_iteration_cap() -> None:
    model = Script(DOC[:30], DOC[20:40], DOC[30:50], "unused")
    result = continue_json(model, "p", max_iterations=3)
    assert result.outcome is Outcome.MAX_ITERATIONS
    # DOC[:50] ends after '"id": ' in sections[0]: the dangling key is dropped
    assert DOC[:50] == '{"title": "Quarterly report", "sections": [{"id": '
    assert result.text == '{"title": "Quarterly report", "sections": [{}]}'
    assert len(result.iterations) == 3


def test_prompt_template_placeholders() -> None:
    ctx = get_contexts('{"a": {"b": "xy')
    prompt = build_continuation_prompt("P {not a placeholder}", ctx,
                                       template="{prompt}|{path}|{overlap}|{marker}|{x}")
    assert prompt == 'P {not a placeholder}|a.b|{"a": {"b": "xy|<<<CUT>>>|{x}'
    assert "{hierarchy}" in CONTINUATION_TEMPLATE and "{overlap}" in CONTINUATION_TEMPLATE


def test_trace_serialises() -> None:
    result = continue_json(Script(DOC[:50], DOC[40:]), "p")
    data = to_jsonable(result)
    json.dumps(data)
    assert [it["case"] for it in data["iterations"]] == ["continue", "parsed"]


def test_bad_limits() -> None:
    with pytest.raises(ValueError):
        continue_json(Script(), "p", max_iterations=0)


def test_nan_is_not_complete_json_in_the_loop_either() -> None:
    # json.loads accepts NaN; get_contexts does not: the loop uses get_contexts' notion
    assert get_contexts('{"a": NaN}').json_parsing_success is False
    model = Script('{"a": NaN}', '{"a": Infinity}', '{"a": -Infinity}')
    result = continue_json(model, "p")
    assert result.outcome is Outcome.NO_VALID_JSON and result.text == ""
    assert [it.case for it in result.iterations] == [Case.BROKEN] * 3
    assert result.iterations[0].note == "invalid JSON at line 1, character 7: " \
                                        "expected a value, found 'N'"


def test_nan_in_a_continuation_is_a_broken_reply_and_the_fallback_is_kept() -> None:
    model = Script('{"a": 1, "b": "x', 'b": "xy", "c": NaN}', 'b": "xy", "c": NaN}',
                   'b": "xy", "c": NaN}')
    result = continue_json(model, "p")
    assert result.outcome is Outcome.FALLBACK_AFTER_FAILURES
    assert result.text == '{"a": 1, "b": "x"}'


@pytest.mark.parametrize(("reply", "message"), [
    (None, "the model function returned None; it must return the reply text"),
    (42, "the model function returned an int, not a str; it must return the reply text"),
    (b'{"a": 1}', "the model function returned bytes (decode them first); it must return "
                  "the reply text"),
])
def test_a_model_that_returns_no_text_raises_a_clear_typed_error(reply: object,
                                                                 message: str) -> None:
    def model(prompt: str) -> str:
        return reply  # type: ignore[return-value]
    with pytest.raises(ModelReplyError) as info:
        continue_json(model, "p")
    assert str(info.value) == message
    assert isinstance(info.value, TypeError)
    assert info.value.index == 0 and info.value.iterations == () and info.value.fallback is None


def test_a_model_returning_none_later_keeps_what_was_received() -> None:
    replies = iter([DOC[:70], None])
    with pytest.raises(ModelReplyError) as info:
        continue_json(lambda prompt: next(replies), "p")  # type: ignore[arg-type, return-value]
    assert info.value.index == 1
    assert [it.case for it in info.value.iterations] == [Case.CONTINUE]
    assert info.value.fallback == DOC[:70] + '"}]}'


class AsyncScript(Script):
    """The same scripted replies, from an async model function."""

    async def reply(self, prompt: str) -> str:
        await asyncio.sleep(0)
        return self(prompt)


def test_async_loop_makes_the_same_calls_and_decisions_as_the_sync_loop() -> None:
    a, b = 70, 120
    replies = (DOC[:a], "no overlap", DOC[a - 10:a] + 'x"}]]]] garbage', DOC[a - 20:b],
               DOC[b - 30:])
    sync_model, async_model = Script(*replies), AsyncScript(*replies)
    expected = continue_json(sync_model, "Write the report as JSON.")
    result = asyncio.run(continue_json_async(async_model.reply, "Write the report as JSON."))
    assert result.outcome is Outcome.COMPLETE and result.text == DOC
    assert [it.case for it in result.iterations] == [
        Case.CONTINUE, Case.NO_OVERLAP, Case.BROKEN, Case.CONTINUE, Case.PARSED]
    assert async_model.prompts == sync_model.prompts
    assert to_jsonable(result) == to_jsonable(expected)


def test_async_loop_gives_up_like_the_sync_loop_and_checks_the_reply_type() -> None:
    model = AsyncScript("Sorry.", "Still no.", "No.")
    result = asyncio.run(continue_json_async(model.reply, "p"))
    assert result.outcome is Outcome.NO_VALID_JSON and len(result.iterations) == 3

    async def silent(prompt: str) -> str:
        return None  # type: ignore[return-value]
    with pytest.raises(ModelReplyError, match="returned None; it must return the reply text"):
        asyncio.run(continue_json_async(silent, "p"))
