"""Time ``pack_context`` on 10,000 documents and ``plan_injection`` on 500 cards + 50 files.

    .venv/bin/python bench/bench_inject_pack.py [--docs 10000] [--cards 500] [--files 50]
                                                [--repeat 5]

Inputs are generated deterministically (seeded) and shaped like the real ones: script-writer
documents of a few hundred to a few thousand characters with nested objects, arrays and CJK
text; knowledge cards with three tiers of text, a third of them extracted from bucket files;
bucket files of 1-8 KB of prose. Printed: best and median of ``--repeat`` runs in
milliseconds, per-item cost, and what the run produced (so a fast but wrong run shows).
``plan_injection`` is timed with a cold token cache (a new ``TokenCounter`` per run: every
text is encoded) and with a warm one (the caller keeps its counter between requests).
Reference floor: ``json.dumps`` of every document (the packer renders each one at least once).
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import time
from collections.abc import Callable
from typing import Any

from budgetlens import (
    InjectionRequest,
    TokenCounter,
    get_tokenizer,
    pack_context,
    plan_injection,
)
from budgetlens.assembly.packer import PackDoc

TYPES = ("brainstorm_idea", "剧本设定", "chronicles", "episode_planning", "episode_synopsis",
         "user_note", "outline")
WORDS = ("the", "episode", "reunion", "office", "secret", "contract", "林晓", "陈默", "误会",
         "真相", "campaign", "rival", "deadline", "confession", "flashback", "🙂")


def sentence(rng: random.Random, n: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(n))


def make_docs(n: int, seed: int = 11) -> list[PackDoc]:
    rng = random.Random(seed)
    docs = []
    for i in range(n):
        data: dict[str, Any] = {
            "title": sentence(rng, 4),
            "body": sentence(rng, rng.randint(20, 200)),
            "characters": [{"name": rng.choice(WORDS), "note": sentence(rng, 12)}
                           for _ in range(rng.randint(0, 4))],
            "episode": rng.randint(1, 60),
        }
        docs.append(PackDoc(
            id=f"doc-{i:05d}", schema_type=rng.choice(TYPES), data=data,
            is_leaf=rng.random() < 0.5,
            origin_type=rng.choice(("user_input", "ai_generated", None)),
            created_at=f"2026-0{rng.randint(1, 9)}-{rng.randint(10, 28)}T10:00:00Z",  # type: ignore[arg-type]
        ))
    return docs


def make_request(cards: int, files: int, seed: int = 5) -> InjectionRequest:
    rng = random.Random(seed)
    buckets = []
    per_bucket = 5
    for b in range(max(1, files // per_bucket)):
        buckets.append({
            "bucket_id": f"bucket-{b}", "title": f"Matter {b}", "matter_id": f"m{b}",
            "background": sentence(rng, 40),
            "files": [{"file_id": f"f{f}", "name": f"file-{b}-{f}.txt",
                       "text": sentence(rng, rng.randint(200, 1500)),
                       "summary": sentence(rng, 15),
                       "mode": "manifest" if rng.random() < 0.3 else "inline"}
                      for f in range(per_bucket)]})
    candidates = []
    for c in range(cards):
        b = rng.randrange(len(buckets))
        from_file = rng.random() < 0.33
        candidates.append({
            "node_id": f"card-{c:04d}", "node_kind": rng.choice(
                ("person", "organization", "document_summary", "procedure",
                 "interaction_policy")),
            "canonical_name": sentence(rng, 3), "relevance_score": rng.random(),
            "matter_id": f"m{b}",
            "compact": sentence(rng, 12), "standard": sentence(rng, 40),
            "full": sentence(rng, 120),
            "provenance_source": "bucket_file" if from_file else "conversation",
            "provenance_source_ref": f"bucket-{b}:f{rng.randrange(per_bucket)}",
        })
    return InjectionRequest.model_validate({
        "model_context_window": 128_000, "tokens_used_before": 9_000,
        "buckets": buckets, "knowledge_cards": candidates})


def timed(fn: Callable[[], Any], repeat: int) -> tuple[list[float], Any]:
    times, result = [], None
    for _ in range(repeat):
        t0 = time.perf_counter()
        result = fn()
        times.append((time.perf_counter() - t0) * 1000)
    return times, result


def line(label: str, times: list[float], per: int, unit: str, extra: str = "") -> None:
    best, median = min(times), statistics.median(times)
    print(f"  {label:<44} best {best:9.1f} ms  median {median:9.1f} ms"
          f"  ({best * 1000 / per:8.1f} µs/{unit}){extra}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--docs", type=int, default=10_000)
    ap.add_argument("--cards", type=int, default=500)
    ap.add_argument("--files", type=int, default=50)
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    enc = get_tokenizer("cl100k_base")

    docs = make_docs(args.docs)
    total_chars = sum(len(json.dumps(d.data, ensure_ascii=False)) for d in docs)
    print(f"pack_context: {len(docs):,} documents, {total_chars:,} chars of JSON data")
    times, _ = timed(lambda: [json.dumps(d.data, ensure_ascii=False) for d in docs],
                     args.repeat)
    line("floor: json.dumps of every document", times, len(docs), "doc")
    for label, kwargs in (("intent by name, --max-chars 16,000", {"max_chars": 16_000}),
                          ("free-text intent, --max-tokens 8,000", {"max_tokens": 8_000}),
                          ("intent 'general', no cap (all 10k rendered)", {})):
        intent = "generate episodes 7-12" if "free" in label else (
            "general" if "general" in label else "generate_episode_synopsis")

        def run(kw: dict[str, Any] = kwargs, it: str = intent) -> Any:
            return pack_context(docs, it, counter=TokenCounter(enc), **kw)

        times, result = timed(run, args.repeat)
        line(label, times, len(docs), "doc",
             f"  -> {result.count('kept')} kept, {result.count('trimmed')} trimmed,"
             f" {result.count('dropped')} dropped, {result.chars:,} chars,"
             f" {result.tokens:,} tokens")

    req = make_request(args.cards, args.files)
    n_files = sum(len(b.files) for b in req.buckets)
    print(f"\nplan_injection: {len(req.knowledge_cards)} cards, {n_files} bucket files in"
          f" {len(req.buckets)} buckets")
    times, plan = timed(lambda: plan_injection(req, counter=TokenCounter(enc)), args.repeat)
    m = plan.manifest
    shown = sum(1 for c in m.knowledge_cards if not c.suppressed)
    line("cold token cache (every text encoded)", times, len(req.knowledge_cards), "card",
         f"  -> {shown} cards, {m.cards_suppressed_by_bucket_overlap} overlap-suppressed,"
         f" {m.total_tokens_used:,}/{m.total_budget_tokens:,} tokens")
    warm = TokenCounter(enc)
    plan_injection(req, counter=warm)
    times, _ = timed(lambda: plan_injection(req, counter=warm), args.repeat)
    line("warm token cache (caller keeps its counter)", times, len(req.knowledge_cards),
         "card")
    big = InjectionRequest.model_validate({**req.model_dump(),
                                           "model_context_window": 2_000_000,
                                           "tokens_used_before": 0,
                                           "policy": {"max_injection_tokens_absolute": 400_000}})
    times, plan = timed(lambda: plan_injection(big, counter=TokenCounter(enc)), args.repeat)
    line("cold, budget 400k (every card and file fits)", times, len(req.knowledge_cards),
         "card", f"  -> {plan.manifest.total_tokens_used:,} tokens rendered")


if __name__ == "__main__":
    main()
