"""pack_context: intents, scores, trimming tiers, capping and the per-document report.

Expected texts are written out by hand from the documented rendering:
``## <schema_type> · <id>[ (trimmed: ...)]\\n<compact JSON>\\n\\n``.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from budgetlens import TokenCounter, get_tokenizer
from budgetlens.assembly.input_errors import InputError
from budgetlens.assembly.packer import (
    IntentMap,
    default_intent_map,
    intent_map_from_text,
    pack_context,
    parse_docs,
    resolve_intent,
)
from budgetlens.serialize import to_jsonable

ENC = get_tokenizer("cl100k_base")
COUNTER = TokenCounter(ENC)

MAP = intent_map_from_text("""
default_intent: general
intents:
  write:
    required_types: [idea, setting]
    keywords: ['write|draft']
  review:
    required_types: [synopsis]
    keywords: ['review', 'draft review']
  general: {}
""")


def doc(id_: str, type_: str = "idea", data: Any = None, **kw: Any) -> dict[str, Any]:
    out = {"id": id_, "schema_type": type_, "data": {"v": id_} if data is None else data}
    out.update(kw)
    return out


def block(id_: str, type_: str, data: Any, note: str = "") -> str:
    return f"## {type_} · {id_}{note}\n{json.dumps(data, ensure_ascii=False)}\n\n"


def report(result: Any) -> dict[str, Any]:
    return {r.id: r for r in result.report}


# ---------------------------------------------------------------------------------------------
# Scores and ranks


def test_scores_follow_the_documented_weights() -> None:
    docs = [
        doc("plain", "other"),
        doc("req", "idea"),
        doc("req-leaf", "idea", is_leaf=True),
        doc("req-leaf-user", "setting", is_leaf=True, origin_type="user_input"),
        doc("leaf-user", "general", is_leaf=True, origin_type="user_input"),
        doc("ai", "idea", origin_type="ai_generated"),
    ]
    result = pack_context(docs, "write", intent_map=MAP.model_copy(
        update={"scoring": MAP.scoring.model_copy(update={"drop_unrequired": False})}))
    scores = {r.id: r.score for r in result.report}
    assert scores == {"plain": 0, "req": 10, "req-leaf": 15, "req-leaf-user": 18,
                      "leaf-user": 8, "ai": 10}
    ranks = [r.id for r in result.report]
    # ties keep input order: req before ai
    assert ranks == ["req-leaf-user", "req-leaf", "req", "ai", "leaf-user", "plain"]
    assert [r.rank for r in result.report] == [0, 1, 2, 3, 4, 5]


def test_recency_adds_up_to_one_point_linearly_between_oldest_and_newest() -> None:
    docs = [doc("old", created_at="2026-01-01T00:00:00Z"),
            doc("mid", created_at="2026-01-01T12:00:00+00:00"),
            doc("new", created_at="2026-01-02T00:00:00"),  # no zone: UTC
            doc("unknown")]
    result = pack_context(docs, "general", intent_map=MAP)
    assert {r.id: r.score for r in result.report} == {"old": 0.0, "mid": 0.5, "new": 1.0,
                                                      "unknown": 0.0}
    assert [r.id for r in result.report] == ["new", "mid", "old", "unknown"]


def test_documents_of_types_the_intent_does_not_need_are_dropped_and_ranked_last() -> None:
    docs = [doc("syn", "synopsis", is_leaf=True), doc("idea", "idea")]
    result = pack_context(docs, "write", intent_map=MAP)
    r = report(result)
    assert r["syn"].status == "dropped" and r["syn"].rank == 1
    assert r["syn"].reason == "type 'synopsis' is not required for intent 'write'"
    assert r["idea"].status == "kept" and r["idea"].rank == 0
    assert result.context == block("idea", "idea", {"v": "idea"})


def test_intent_without_types_keeps_every_document() -> None:
    docs = [doc("a", "x"), doc("b", "y")]
    result = pack_context(docs, "general", intent_map=MAP)
    assert [r.status for r in result.report] == ["kept", "kept"]
    assert result.context == block("a", "x", {"v": "a"}) + block("b", "y", {"v": "b"})
    assert result.chars == len(result.context)
    assert result.tokens == len(ENC.encode(result.context))


# ---------------------------------------------------------------------------------------------
# Trimming tiers


def test_trimming_by_rank_full_truncated_metadata() -> None:
    long = "x" * 600
    data = {"title": "T", "body": long, "nested": {"deep": long, "n": [1, 2]}, "n": 3,
            "flag": True, "list": [1, 2, 3]}
    docs = [doc(f"d{i}", data=data) for i in range(10)]
    result = pack_context(docs, "general", intent_map=MAP)
    rows = result.report
    # ranks 0-3 full; 4 (< 10/2) truncated; 5-9 metadata only
    assert [r.tier for r in rows] == ["full"] * 4 + ["truncated"] + ["metadata"] * 5
    assert [r.status for r in rows] == ["kept"] * 4 + ["trimmed"] * 6
    cut = "x" * 500 + " [truncated]"
    truncated = {"title": "T", "body": cut, "nested": {"deep": cut, "n": [1, 2]}, "n": 3,
                 "flag": True, "list": [1, 2, 3]}
    metadata = {"title": "T", "body": "x" * 100 + " [summarized]",
                "nested": {"summary": "Original had 2 items"}, "n": 3, "flag": True,
                "list": {"summary": "Original had 3 items"}}
    expected = "".join(block(f"d{i}", "idea", data) for i in range(4))
    expected += block("d4", "idea", truncated, " (trimmed: long strings truncated)")
    expected += "".join(block(f"d{i}", "idea", metadata, " (trimmed: metadata and structure only)")
                        for i in range(5, 10))
    assert result.context == expected
    r = report(result)
    assert r["d4"].chars_before == len(block("d4", "idea", data))
    assert r["d4"].chars_after == len(block("d4", "idea", truncated,
                                            " (trimmed: long strings truncated)"))


def test_a_tier_that_changes_nothing_keeps_the_document_whole() -> None:
    docs = [doc(f"d{i}", data={"short": "s"}) for i in range(6)]
    result = pack_context(docs, "general", intent_map=MAP)
    assert all(r.status == "kept" and r.tier == "full" for r in result.report)
    assert result.report[4].reason == "rank 4: nothing to trim"


def test_metadata_tier_of_non_object_data() -> None:
    docs = [doc(f"d{i}", data=i) for i in range(4)]
    docs += [doc("arr", data=[1, 2]), doc("str", data="y" * 150), doc("num", data=7)]
    result = pack_context(docs, "general", intent_map=MAP)
    r = report(result)
    # 7 candidates: ranks 4..6 are >= 3.5, so metadata only
    assert r["arr"].tier == "metadata"
    assert block("arr", "idea", {"summary": "Original had 2 items"},
                 " (trimmed: metadata and structure only)") in result.context
    assert block("str", "idea", "y" * 100 + " [summarized]",
                 " (trimmed: metadata and structure only)") in result.context
    assert r["num"].status == "kept"


# ---------------------------------------------------------------------------------------------
# Capping


def test_cap_drops_the_lowest_ranked_and_everything_after_the_first_miss() -> None:
    docs = [doc("a", data={"t": "a" * 50}), doc("b", data={"t": "b" * 80}),
            doc("c", data={"t": "c"})]
    a = block("a", "idea", {"t": "a" * 50})
    b = block("b", "idea", {"t": "b" * 80})
    # a fits, b does not (even trimmed: nothing to trim below 100 chars), c would fit but a
    # lower-ranked document is never kept once a higher one is dropped
    cap = len(a) + len(b) - 1
    result = pack_context(docs, "general", max_chars=cap, intent_map=MAP)
    r = report(result)
    assert result.context == a
    assert [r["a"].status, r["b"].status, r["c"].status] == ["kept", "dropped", "dropped"]
    assert r["b"].reason == f"over the cap ({cap - len(a):,} chars left)"
    assert r["c"].reason == "cap reached at rank 1 (b)"
    assert r["c"].chars_before == len(block("c", "idea", {"t": "c"}))
    assert r["c"].chars_after == 0


def test_a_document_over_the_cap_is_trimmed_harder_before_it_is_dropped() -> None:
    data = {"t": "z" * 800}
    truncated = block("a", "idea", {"t": "z" * 500 + " [truncated]"},
                      " (trimmed: long strings truncated)")
    result = pack_context([doc("a", data=data)], "general", max_chars=len(truncated),
                          intent_map=MAP)
    row = result.report[0]
    assert result.context == truncated
    assert (row.status, row.tier) == ("trimmed", "truncated")
    assert row.reason == "rank 0: long strings truncated to fit the cap"

    strict = MAP.model_copy(update={"trimming": MAP.trimming.model_copy(
        update={"escalate": False})})
    result = pack_context([doc("a", data=data)], "general", max_chars=len(truncated),
                          intent_map=strict)
    assert result.report[0].status == "dropped" and result.context == ""


def test_zero_cap_gives_an_empty_context() -> None:
    result = pack_context([doc("a")], "general", max_chars=0, intent_map=MAP)
    assert result.context == "" and result.report[0].status == "dropped"


def test_token_cap_counts_with_the_tokenizer() -> None:
    docs = [doc(f"d{i}", data={"text": "token budget " * 20}) for i in range(5)]
    one = len(ENC.encode(block("d0", "idea", {"text": "token budget " * 20})))
    result = pack_context(docs, "general", max_tokens=2 * one + 1, intent_map=MAP,
                          counter=COUNTER)
    assert [r.status for r in result.report] == ["kept", "kept", "dropped", "dropped",
                                                 "dropped"]
    assert result.tokens == len(ENC.encode(result.context)) == 2 * one


# ---------------------------------------------------------------------------------------------
# Intents


def test_intent_by_name_structured_keyword_and_default() -> None:
    assert resolve_intent("write", MAP).matched_by == "name"
    r = resolve_intent({"intent": "review", "params": {"episodes": "7-12"}}, MAP)
    assert (r.name, r.matched_by, dict(r.params)) == ("review", "structured",
                                                      {"episodes": "7-12"})
    assert r.required_types == ("synopsis",)
    # first intent in file order wins: "draft review" matches write's 'write|draft' first
    r = resolve_intent("please draft review notes", MAP)
    assert (r.name, r.matched_by) == ("write", "keyword write|draft")
    r = resolve_intent("REVIEW the synopsis", MAP)
    assert r.name == "review"
    r = resolve_intent("what is the weather", MAP)
    assert (r.name, r.matched_by, r.required_types) == ("general", "default", ())
    r = resolve_intent({"user_request": "write episode 3"}, MAP)
    assert (r.name, r.matched_by) == ("write", "keyword write|draft")


@pytest.mark.parametrize(("intent", "message"), [
    ({"intent": "nope"}, "intent.intent: unknown intent 'nope'; known: write, review, general"),
    ({"intent": 3}, "intent.intent: expected a string"),
    ({"params": {}}, "intent.intent: field required"),
    ({"intent": "write", "params": []}, "intent.params: expected an object"),
    ({"intent": "write", "extra": 1}, "intent.extra: unknown field"),
])
def test_bad_structured_intents(intent: dict[str, Any], message: str) -> None:
    with pytest.raises(InputError) as info:
        resolve_intent(intent, MAP)
    assert info.value.messages == (message,)


def test_default_intent_map_ships_the_seed_intents() -> None:
    m = default_intent_map()
    assert m.default_intent == "general"
    assert m.intents["generate_episode_synopsis"].required_types == (
        "brainstorm_idea", "剧本设定", "chronicles", "episode_planning")
    assert resolve_intent("generate episodes 7-12", m).name == "generate_episode_synopsis"
    assert resolve_intent("帮我写第7到12集的分集大纲", m).name == "generate_episode_synopsis"
    assert (m.scoring.required, m.scoring.leaf, m.scoring.user_input) == (10, 5, 3)
    assert (m.trimming.full_count, m.trimming.truncate_chars, m.trimming.summary_chars) == \
        (4, 500, 100)


def test_intent_map_in_json_with_custom_weights() -> None:
    m = intent_map_from_text(json.dumps({
        "default_intent": "any", "scoring": {"leaf": 100},
        "intents": {"any": {}, "x": {"required_types": ["t"]}}}))
    assert isinstance(m, IntentMap) and m.scoring.leaf == 100
    result = pack_context([doc("a", "t"), doc("b", "u", is_leaf=True)], "x",
                          intent_map=m.model_copy(update={"scoring": m.scoring.model_copy(
                              update={"drop_unrequired": False})}))
    assert [r.id for r in result.report] == ["b", "a"]


@pytest.mark.parametrize(("text", "message"), [
    ("default_intent: x\nintents: {y: {}}",
     "m.yaml: default_intent: 'x' is not one of the intents"),
    ("default_intent: y\nintents: {y: {keywords: ['(']}}",
     "m.yaml: intents.y.keywords: keyword '(' is not a valid regular expression"),
    ("default_intent: y\nintents: {y: {required_types: 3}}",
     "m.yaml: intents.y.required_types: "),
    ("default_intent: y\nintents: {y: {}}\nscoring: {leaf: high}", "m.yaml: scoring.leaf: "),
    ("default_intent: y\nintnets: {}", "m.yaml: intents: field required"),
    ("[1, 2]", "m.yaml: expected a mapping"),
    ("a: [", "m.yaml: not valid YAML/JSON"),
])
def test_bad_intent_maps_name_the_field(text: str, message: str) -> None:
    with pytest.raises(InputError) as info:
        intent_map_from_text(text, source="m.yaml")
    assert any(m.startswith(message) for m in info.value.messages), info.value.messages


# ---------------------------------------------------------------------------------------------
# Bad documents


@pytest.mark.parametrize(("docs", "message"), [
    ('[{"id": "a", "data": 1}]', "docs[0].schema_type: field required"),
    ('[{"id": "a", "schema_type": "t", "data": 1}, {"id": 2, "schema_type": "t", "data": 1}]',
     "docs[1].id: expected a string, got an integer"),
    ('[{"id": "a", "schema_type": "t", "data": 1, "is_leaf": "yes"}]',
     "docs[0].is_leaf: expected true or false, got a string"),
    ('[{"id": "a", "schema_type": "t", "data": 1, "created_at": "last week"}]',
     "docs[0].created_at: not an ISO 8601 date-time: 'last week'"),
    ('[{"id": "a", "schema_type": "t", "data": 1, "created_at": 5}]',
     "docs[0].created_at: expected an ISO 8601 date-time string"),
    ('[{"id": "a", "schema_type": "t", "data": 1, "extra": 1}]', "docs[0].extra: unknown field"),
    ('[{"id": "a", "schema_type": "t"}]', "docs[0].data: field required"),
    ('{"id": "a"}', "docs: expected an array, got an object"),
    ('[{"id": "a", ', "docs: invalid JSON"),
    ('[{"id": "", "schema_type": "t", "data": 1}]', "docs[0].id: string should have at least"),
])
def test_bad_documents_name_the_field(docs: str, message: str) -> None:
    with pytest.raises(InputError) as info:
        parse_docs(docs)
    assert any(m.startswith(message) for m in info.value.messages), info.value.messages


def test_huge_document_is_rejected_by_size() -> None:
    # {"t": "x...x"} is 7 + 2,000 + 2 = 2,009 characters
    text = json.dumps([doc("a"), doc("b", data={"t": "x" * 2000})])
    with pytest.raises(InputError) as info:
        parse_docs(text, max_doc_chars=1000)
    assert info.value.messages == ("docs[1].data: 2,009 characters, more than the 1,000 a"
                                   " document may hold",)


def test_deeply_nested_data_is_an_error_not_a_crash() -> None:
    text = '[{"id": "a", "schema_type": "t", "data": ' + "[" * 5000 + "]" * 5000 + "}]"
    with pytest.raises(InputError) as info:
        parse_docs(text)
    assert info.value.messages[0].startswith("docs")


def test_duplicate_ids_and_bad_caps_are_errors() -> None:
    with pytest.raises(InputError, match=r"docs\[1\]\.id: 'a' repeats docs\[0\]"):
        pack_context([doc("a"), doc("a")], "general", intent_map=MAP)
    with pytest.raises(InputError, match="max_chars: expected an integer >= 0"):
        pack_context([doc("a")], "general", max_chars=-1, intent_map=MAP)
    with pytest.raises(InputError, match=r"docs\[0\]\.schema_type: field required"):
        pack_context([{"id": "a", "data": 1}], "general", intent_map=MAP)


# ---------------------------------------------------------------------------------------------
# Properties

JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-1000, 1000)
    | st.text(alphabet=st.sampled_from("ab 年🙂\n\"\\"), max_size=620),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(
        st.sampled_from(["k", "title", "body", "x"]), inner, max_size=4),
    max_leaves=12)


@st.composite
def doc_sets(draw: st.DrawFn) -> list[dict[str, Any]]:
    n = draw(st.integers(0, 14))
    return [{"id": f"d{i}", "schema_type": draw(st.sampled_from(["idea", "setting", "synopsis"])),
             "data": draw(JSON), "is_leaf": draw(st.booleans()),
             "origin_type": draw(st.sampled_from([None, "user_input", "ai_generated"])),
             "created_at": draw(st.none() | st.sampled_from(
                 ["2026-01-01T00:00:00Z", "2026-02-01T00:00:00Z", "2026-03-01T10:00:00Z"]))}
            for i in range(n)]


INTENTS = st.sampled_from(["write", "review", "general", "please draft"])


def _check_prefix(result: Any) -> None:
    # over every document, type-filtered ones included: kept ranks all come before dropped
    kept = [r.rank for r in result.report if r.status != "dropped"]
    dropped = [r.rank for r in result.report if r.status == "dropped"]
    assert not kept or not dropped or max(kept) < min(dropped)


@settings(max_examples=100, deadline=None)
@given(doc_sets(), INTENTS, st.integers(0, 4000))
def test_packing_never_exceeds_the_char_cap_and_keeps_a_prefix(
        docs: list[dict[str, Any]], intent: str, cap: int) -> None:
    result = pack_context(docs, intent, max_chars=cap, intent_map=MAP, counter=COUNTER)
    assert len(result.context) == result.chars <= cap
    assert sum(r.chars_after for r in result.report) == result.chars
    _check_prefix(result)
    assert len(result.report) == len(docs)
    assert sorted(r.rank for r in result.report) == list(range(len(docs)))


@settings(max_examples=60, deadline=None)
@given(doc_sets(), INTENTS, st.integers(0, 1500))
def test_packing_never_exceeds_the_token_cap(docs: list[dict[str, Any]], intent: str,
                                             cap: int) -> None:
    result = pack_context(docs, intent, max_tokens=cap, intent_map=MAP, counter=COUNTER)
    assert len(ENC.encode(result.context)) == result.tokens <= cap
    _check_prefix(result)


@settings(max_examples=40, deadline=None)
@given(doc_sets(), INTENTS, st.none() | st.integers(0, 3000))
def test_packing_is_deterministic(docs: list[dict[str, Any]], intent: str,
                                  cap: int | None) -> None:
    first = pack_context(docs, intent, max_chars=cap, intent_map=MAP, counter=COUNTER)
    again = pack_context(json.loads(json.dumps(docs)), intent, max_chars=cap, intent_map=MAP,
                         counter=TokenCounter(ENC))
    assert to_jsonable(first) == to_jsonable(again)


def test_deep_or_non_json_python_data_is_an_input_error() -> None:
    deep: list[Any] = []
    node = deep
    for _ in range(3000):
        node.append([])
        node = node[0]
    with pytest.raises(InputError) as info:
        pack_context([{"id": "a", "schema_type": "t", "data": deep}], "general", intent_map=MAP)
    assert info.value.messages[0].startswith("docs[0].data[0][0]")
    assert info.value.messages[0].endswith("maximum validation depth exceeded")
    with pytest.raises(InputError, match=r"docs\[0\]\.data\.k: input was not a valid JSON"):
        pack_context([{"id": "a", "schema_type": "t", "data": {"k": object()}}], "general",
                     intent_map=MAP)
