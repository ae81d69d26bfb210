"""The library as a pipeline runner uses it (docs/runtime.md): the doc's example runs and prints
what the doc says; defaults, tokenizers as names or objects, the public types."""

from __future__ import annotations

import contextlib
import io
import os
import re
from pathlib import Path
from typing import Any

import pytest

import budgetlens
from budgetlens import (
    Case,
    CheckOptions,
    ContinuationResult,
    DiskFiles,
    HistoryTrim,
    Iteration,
    MergeResult,
    ModelReplyError,
    Outcome,
    TokenCounter,
    check_pipeline,
    get_tokenizer,
    pack_context,
    trim_history,
)
from budgetlens.serialize import to_jsonable

ROOT = Path(__file__).resolve().parents[2]
RUNTIME = (ROOT / "docs/runtime.md").read_text("utf-8")
README = (ROOT / "README.md").read_text("utf-8")
LONG_REPORT = "examples/pipelines/long_report.yaml"

# What the example prints, written by hand: 6144 -> 5915 is the clamp of long_report.yaml
# (write_report needs 8421 of 8192: 229 over); the five turns cost 421 + 401 + 421 + 401 + 7
# cl100k tokens, over chat.yaml's 1536 by 115: the oldest (421) goes.
EXPECTED_OUTPUT = """\
max_context_tokens: 6144 -> 5915
output limits: {'outline': 256, 'write_report': 2048}
history: {'budget': 1536, 'turns_before': 5, 'turns_after': 4, 'turns_dropped': 1, \
'tokens_before': 1651, 'tokens_after': 1230, 'tokens_dropped': 421}
complete ['continue', 'parsed']
{"title": "Weekly report", "sections": [{"heading": "Sales", "text": "Orders rose by a \
tenth."}, {"heading": "Support", "text": "Replies got faster."}]}
complete 2 model calls
"""


def _run(code: str) -> str:
    out = io.StringIO()
    cwd = os.getcwd()
    os.chdir(ROOT)
    try:
        with contextlib.redirect_stdout(out):
            exec(compile(code, "docs/runtime.md", "exec"), {"__name__": "runtime_doc"})
    finally:
        os.chdir(cwd)
    return out.getvalue()


def test_the_runtime_example_runs_and_prints_what_the_doc_shows() -> None:
    (code,) = re.findall(r"```python\n(.*?)```", RUNTIME, re.S)
    (shown,) = re.findall(r"It prints:\n\n```text\n(.*?)```", RUNTIME, re.S)
    printed = _run(code)
    assert printed == EXPECTED_OUTPUT
    assert shown == EXPECTED_OUTPUT


def test_the_readme_links_the_runtime_page() -> None:
    assert "(docs/runtime.md)" in README


def test_every_name_the_runtime_page_documents_is_exported() -> None:
    for name in ("check_pipeline", "CheckOptions", "ClampValues", "trim_history",
                 "HistoryTrim", "TokenCounter", "TokenizerLike", "continue_json",
                 "continue_json_async", "ContinuationResult", "Iteration", "Case", "Outcome",
                 "ModelReplyError", "MergeResult", "JsonContexts"):
        assert name in budgetlens.__all__, name
        assert getattr(budgetlens, name) is not None
    assert sorted(set(budgetlens.__all__)) == sorted(budgetlens.__all__)  # no duplicates
    for name in budgetlens.__all__:
        getattr(budgetlens, name)
    # the result types of continue_json are the exported ones
    assert ContinuationResult.__annotations__["outcome"] in ("Outcome", Outcome)
    assert Iteration.__annotations__["case"] in ("Case", Case)
    assert Iteration.__annotations__["merge"] in ("MergeResult | None",)
    assert MergeResult is budgetlens.merge_with_overlap("ab", "bc").__class__


def test_check_pipeline_reads_from_disk_by_default() -> None:
    cwd = os.getcwd()
    os.chdir(ROOT)
    try:
        report = check_pipeline(LONG_REPORT)
        explicit = check_pipeline(LONG_REPORT, files=DiskFiles(), options=CheckOptions())
    finally:
        os.chdir(cwd)
    assert [(s.step, s.total, s.window.value) for s in report.steps] == [
        ("outline", 6614, 8192), ("write_report", 8421, 8192)]
    assert report.tokenizer == "cl100k_base"
    assert [to_jsonable(d) for d in report.diagnostics] == [
        to_jsonable(d) for d in explicit.diagnostics]


def test_check_pipeline_takes_a_tokenizer_object_as_well_as_a_name() -> None:
    path = ROOT / LONG_REPORT
    by_name = check_pipeline(path, options=CheckOptions(tokenizer="o200k_base"))
    by_object = check_pipeline(path, options=CheckOptions(tokenizer=get_tokenizer("o200k_base")))
    assert by_name.tokenizer == by_object.tokenizer == "o200k_base"
    assert [s.total for s in by_object.steps] == [s.total for s in by_name.steps]
    # a counting function: every text costs 1 token (system prompt 1 + template 1 + 32)
    one = check_pipeline(path, options=CheckOptions(tokenizer=lambda text: 1))
    assert one.tokenizer == "<lambda>"
    assert [s.fixed.value for s in one.steps] == [34, 34]


TURNS = ["user: hi", "assistant: hello!", "user: my order is late"]


@pytest.mark.parametrize("tokenizer", [
    "cl100k_base",
    "gpt-4",                                     # a model name
    get_tokenizer("cl100k_base"),                # a tokenizer object
    get_tokenizer("cl100k_base")._encoding,      # a tiktoken Encoding (encode only)
    TokenCounter("cl100k_base"),                 # a counter, with its cache
    TokenCounter(get_tokenizer()),
    get_tokenizer("cl100k_base").count,          # a function text -> int
], ids=["name", "model", "tokenizer", "tiktoken-encoding", "counter-by-name",
        "counter", "function"])
def test_trim_history_takes_any_tokenizer(tokenizer: Any) -> None:
    # cl100k_base: 'user: hi' 3, 'assistant: hello!' 4, 'user: my order is late' 6 tokens
    result: HistoryTrim[str] = trim_history(TURNS, 10, tokenizer)
    assert result.dropped == ["user: hi"]
    assert result.kept == ["assistant: hello!", "user: my order is late"]
    assert (result.tokens_before, result.tokens_after) == (13, 10)


def test_trim_history_with_a_tokenizer_that_only_has_count() -> None:
    class Words:
        def count(self, text: str) -> int:
            return len(text.split())
    result = trim_history(TURNS, 5, Words())  # 2 + 2 + 5 words
    assert result.kept == ["user: my order is late"]
    assert result.tokens_before == 9


def test_a_bad_tokenizer_is_a_clear_type_error() -> None:
    with pytest.raises(TypeError) as info:
        trim_history(TURNS, 10, 42)  # type: ignore[arg-type]
    assert str(info.value) == (
        "expected a tokenizer: a name such as 'cl100k_base', a tokenizer object (count(text) or"
        " encode(text)), a TokenCounter or a function text -> int; got int")
    with pytest.raises(TypeError, match=r"tokenizer '<lambda>' counted 'x' tokens for a text"):
        trim_history(TURNS, 10, lambda text: "x")  # type: ignore[arg-type, return-value]


def test_pack_context_takes_a_tokenizer_name() -> None:
    docs = [{"id": "a", "schema_type": "note", "data": "hello world"}]
    result = pack_context(docs, "general", counter="o200k_base")
    assert result.tokenizer == "o200k_base"


def test_model_reply_error_is_exported_and_typed() -> None:
    assert issubclass(ModelReplyError, TypeError)
    result = budgetlens.continue_json(lambda prompt: '{"a": 1}', "p")
    assert isinstance(result, ContinuationResult) and result.outcome is Outcome.COMPLETE
    assert result.iterations[0].case is Case.PARSED


# The "Fitting a request" example (a ``py`` block, so the example above stays the page's
# one ``python`` block). The numbers, by the cookbook's rules over plain tiktoken o200k_base
# (checked in the test below): the six messages cost 1,048 tokens; the 1,000-token server
# window needs 300 output tokens (half of max_tokens 600), so the oldest turn (570 tokens)
# goes, 478 are left and max_tokens is clamped to 1,000 - 478 = 522; the refused request
# costs 14 + 6,006 + 3 = 6,023, and 6,023 + 500 - 4,096 = 2,427 over.
FIT_EXPECTED = """\
gpt-4o: input 1,048 tokens + margin 0 + output 1,000 fit the 128,000-token window
gpt-4o: input 478 tokens + margin 0 + output 522 fit the 1,000-token window; 2 history \
message(s) dropped; max_tokens clamped from 600 to 522
['system', 'user', 'assistant', 'user'] 522
['messages', 'max_completion_tokens']
refused: over by 2427 | system 14 + 1 message 6,006 + reply 3 = 6,023
complete [('json', 'completion_tokens'), ()]
{"parcel": 1042, "events": ["left the warehouse", "in transit", "out for delivery"]}
"""


def test_the_fitting_example_runs_and_prints_what_the_doc_shows() -> None:
    section = RUNTIME.split("## 5. Fitting a request", 1)[1]
    (code,) = re.findall(r"```py\n(.*?)```", section, re.S)
    (shown,) = re.findall(r"This prints \(.*?\):\n\n```text\n(.*?)```", section, re.S)
    assert _run(code) == FIT_EXPECTED
    assert shown == FIT_EXPECTED
    for name in ("fit_request", "check_request", "count_request", "RequestFit",
                 "RequestDoesNotFit", "continue_json_chat", "read_reply", "stopped_at_length"):
        assert name in budgetlens.__all__ and f"`{name}" in RUNTIME, name


def test_the_fitting_examples_numbers_follow_the_cookbook() -> None:
    from tests.core.request.reference import encoding, messages_tokens

    enc = encoding("o200k_base")
    system = {"role": "system", "content": "You are the support assistant of a parcel service."}
    turns = [{"role": "user", "content": "Where is parcel 1042? " * 40},
             {"role": "assistant", "content": "It left the warehouse on Tuesday. " * 40},
             {"role": "user", "content": "And parcel 1043? " * 40},
             {"role": "assistant", "content": "It arrives tomorrow morning. " * 40}]
    question = {"role": "user", "content": "Can I change the delivery address?"}
    assert messages_tokens([system, *turns, question], enc) == 1048
    assert messages_tokens([system, *turns[2:], question], enc) == 478
    assert 1000 - 1048 < 300 <= 1000 - 478  # one turn dropped is enough, none is not
    summary = {"role": "user", "content": "summarise this " * 2000}
    assert messages_tokens([system, summary], enc) == 6023
