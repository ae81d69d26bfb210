"""The rendering's layout paths give what the previous implementation gave, and skip work.

Three paths are checked here, on documents shaped like ``bench/bench_json.py``'s (generated
below, smaller) and on variants built to defeat each path's checks:

- a container side branch whose source is already laid out as it is printed (``json.dumps``
  with ``indent=2`` at the same depth) is measured from its decoded value and printed as its
  source (``render.verbatim_cost``);
- a RUN of records written as ``json.dumps`` writes them on one line is measured from
  lengths and printed by string replacement (``runs.compact_record_tail``);
- the last items of a RUN that cannot fit are split off unread (``runs.split_known``).

The expected renderings come from ``tests/core/continuation/legacy/`` (the frozen previous
implementation), and, for the two bench shapes at budget 10,000, also from
``golden_renderings.json``: the sha256 and length of each rendering as produced by ``main``
before these paths existed (commit 5843158), frozen. Mechanisms are counted, never timed.
"""

from __future__ import annotations

import hashlib
import json
import random
from pathlib import Path
from typing import Any

import pytest

from budgetlens import get_contexts
from budgetlens.continuation import pretty as pretty_module
from budgetlens.continuation import render as render_module
from budgetlens.serialize import to_jsonable
from tests.core.continuation.legacy.legacy_contexts import get_contexts as legacy_get_contexts

_WORDS = ("budget", "token", "context", "window", "model", "pipeline", "prompt", "section",
          "summary", "überblick", "数据", "continuation", "merge", "overlap", "cut", "😀")


def report(size: int, seed: int = 7) -> str:
    """``bench_json``'s report shape: pretty-printed sections with escapes and nesting."""
    rng = random.Random(seed)

    def sentence(words: int) -> str:
        return " ".join(rng.choice(_WORDS) for _ in range(words))

    sections: list[dict[str, Any]] = []
    doc = {"document": {"metadata": {"title": "Generated report", "version": 3,
                                     "tags": ["a", "b"], "draft": False, "reviewer": None},
                        "sections": sections}}
    length = 200
    while length < size:
        section = {
            "id": f"section{len(sections)}", "title": sentence(4).title(),
            "score": round(rng.uniform(-1000, 1000), 3), "count": rng.randint(0, 10**6),
            "published": rng.random() < 0.5, "editor": None,
            "tags": [sentence(1) for _ in range(rng.randint(0, 4))],
            "content": sentence(rng.randint(10, 60)) + ' "quoted" \\ end\n',
            "refs": [{"page": rng.randint(1, 400), "note": sentence(3)}
                     for _ in range(rng.randint(0, 2))],
        }
        sections.append(section)
        length += len(json.dumps(section, ensure_ascii=False, indent=2)) + 8
    return json.dumps(doc, ensure_ascii=False, indent=2)


def records(size: int, seed: int = 7, *, words: tuple[str, ...] = _WORDS,
            separators: tuple[str, str] | None = None) -> str:
    """``bench_json``'s records shape: one compact array of small flat records."""
    rng = random.Random(seed)
    rows: list[dict[str, Any]] = []
    length = 2
    while length < size:
        row = {"id": len(rows), "name": rng.choice(words), "ok": rng.random() < 0.5,
               "value": round(rng.uniform(0, 100), 2), "note": None}
        rows.append(row)
        length += len(json.dumps(row, ensure_ascii=False)) + 2
    return json.dumps(rows, ensure_ascii=False, separators=separators)


def _variants() -> dict[str, str]:
    base = records(40_000, 3)
    rows = json.loads(base)
    duplicate = base.replace('"note": null}', '"note": null, "id": -1}', 40)
    spaced = base.replace('"ok": ', '"ok" : ', 25)  # a colon with a space before it
    commas = records(40_000, 4, words=("a, b", "c", "d, e, f", "数据"))  # strings with ", "
    escaped_key = json.dumps([{"i\\d" if k == "id" and r["id"] % 50 == 7 else k: v
                               for k, v in r.items()} for r in rows], ensure_ascii=False)
    nested = json.dumps({"rows": [{"id": i, "deep": {"a": [[[[[[[i]]]]]]], "b": "x"}}
                                  for i in range(500)]}, indent=2)
    uneven = report(40_000, 5).replace('\n        "title"', '\n       "title"', 9)
    tabs = json.dumps(json.loads(report(30_000, 6)), indent="\t", ensure_ascii=False)
    empty = json.dumps([r if r["id"] % 37 else {} for r in rows], ensure_ascii=False)
    duplicate_pretty = report(40_000, 8).replace('"editor": null,', '"editor": null,\n'
                                                 '        "editor": 1,', 30)
    return {"report": report(60_000), "records": records(60_000), "records-tight":
            records(40_000, 2, separators=(",", ":")), "records-duplicate": duplicate,
            "records-spaced": spaced, "records-commas": commas,
            "records-escaped-key": escaped_key, "records-empty": empty, "nested": nested,
            "report-uneven": uneven, "report-tabs": tabs,
            "report-duplicate": duplicate_pretty}


DOCS = _variants()


def _same(text: str, budget: int) -> None:
    new = to_jsonable(get_contexts(text, budget=budget))
    old = to_jsonable(legacy_get_contexts(text, budget=budget))
    assert new == old, f"differs for a cut at {len(text)} (budget {budget}): {text[-60:]!r}"


@pytest.mark.parametrize("name", sorted(DOCS))
def test_layout_paths_match_the_previous_implementation(name: str) -> None:
    doc = DOCS[name]
    rng = random.Random(name)
    offsets = sorted({rng.randrange(len(doc) // 3, len(doc) + 1) for _ in range(12)}
                     | {len(doc) - 1})
    for k, offset in enumerate(offsets):
        for budget in (200, 1000, 10_000, 30_000)[k % 2::2]:
            _same(doc[:offset], budget)


def _digest(text: str) -> dict[str, Any]:
    return {"sha256": hashlib.sha256(text.encode("utf-8")).hexdigest(), "chars": len(text)}


GOLDEN = Path(__file__).with_name("golden_renderings.json")


def _golden_cases() -> dict[str, str]:
    """The 20 cuts bench_json makes of each bench shape (100 KB), keyed by shape and cut."""
    out: dict[str, str] = {}
    for shape, doc in (("report", report(100_000)), ("records", records(100_000))):
        step = len(doc) / 21
        for k in range(20):
            out[f"{shape}/{k}"] = doc[:int(step * (k + 1))]
    return out


def test_bench_shapes_at_budget_10000_render_as_main_did() -> None:
    golden = json.loads(GOLDEN.read_text(encoding="utf-8"))
    cases = _golden_cases()
    assert sorted(golden) == sorted(cases)
    for key, cut in cases.items():
        ctx = get_contexts(cut, budget=10_000)
        assert _digest(ctx.hierarchy_context_for_prompt) == golden[key]["prompt"], key
        assert _digest(ctx.complete_part) == golden[key]["complete"], key


def test_laid_out_sections_are_printed_from_their_source() -> None:
    # the sections are json.dumps(indent=2) at the depth they are printed at: none is laid
    # out again line by line, and none is measured with the cost pattern
    doc = DOCS["report"]
    cut = doc[:len(doc) * 9 // 10]
    mp = pytest.MonkeyPatch()
    relaid: list[int] = []
    real_relaid = pretty_module._relaid_lines
    mp.setattr(pretty_module, "_relaid_lines",
               lambda *a: relaid.append(1) or real_relaid(*a))  # type: ignore[func-returns-value]
    measured: list[int] = []
    real_cost = render_module.value_cost
    mp.setattr(render_module, "value_cost",
               lambda *a, **k: measured.append(1) or real_cost(*a, **k))  # type: ignore[func-returns-value]
    try:
        ctx = get_contexts(cut, budget=10_000)
    finally:
        mp.undo()
    assert ctx.hierarchy_context_for_prompt == legacy_get_contexts(
        cut, budget=10_000).hierarchy_context_for_prompt
    assert ctx.hierarchy_context_for_prompt.count('"id": "section') >= 15  # sections in full
    assert len(relaid) <= 3, len(relaid)
    assert len(measured) <= 3, len(measured)


def test_compact_records_are_taken_without_a_pattern_per_record() -> None:
    doc = DOCS["records"]
    cut = doc[:len(doc) - 300]
    mp = pytest.MonkeyPatch()
    calls: list[int] = []
    real = render_module.record_tail
    mp.setattr(render_module, "record_tail", lambda *a: calls.append(1) or real(*a))  # type: ignore[func-returns-value]
    try:
        ctx = get_contexts(cut, budget=10_000)
    finally:
        mp.undo()
    assert ctx.hierarchy_context_for_prompt == legacy_get_contexts(
        cut, budget=10_000).hierarchy_context_for_prompt
    assert ctx.hierarchy_context_for_prompt.count('"id": ') > 250  # hundreds of records
    assert calls == []  # the member-by-member reading was never needed
