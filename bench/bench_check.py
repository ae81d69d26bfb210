"""Time ``check_pipeline`` on a generated workspace of 1,000 pipelines and 2,000 prompts.

    .venv/bin/python bench/bench_check.py [--pipelines 1000] [--prompts 2000] [--bases 10]

The workspace is generated deterministically (seeded) in a temporary folder that is removed
at the end: a config.json, ``--bases`` base pipelines, ``--pipelines`` pipelines each
extending a base and overriding a few settings, with two ``call_model`` steps over two of
the ``--prompts`` prompt files (every prompt is used; 50-1,500 words of English prose with
some CJK and emoji). Printed:

- ``check`` of every pipeline with a cold cache (a new ``BudgetCache``: every file is read,
  parsed and counted), with a warm cache (nothing changed: fingerprints only), and warm
  after one prompt file changed; wall time, per pipeline;
- peak memory of the cold run (Python heap via tracemalloc, in a separate run so the
  timings are not slowed by it) and the process's peak RSS;
- token counting on the 2,000 prompt texts: raw tiktoken ``encode_ordinary`` with the
  shipped encoding (the floor), ``TokenCounter.count`` cold and warm, and their ratios.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import shutil
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from budgetlens import BudgetCache, CheckOptions, DiskFiles, TokenCounter, check_pipeline
from budgetlens.contract.discovery import find_pipelines
from budgetlens.tokens.core import get_tokenizer

_PROSE = ("the budget of every step must fit the context window so retrieval history and"
          " output share what is left after the system prompt template overhead and safety"
          " margin customer order refund shipping parcel tracking invoice policy answer question")
WORDS = _PROSE.split(" ")
T = TypeVar("T")

EXTRA = ["予算", "トークン", "上下文", "🚀", "📦", "café", "naïve", "Größe"]


def _prose(rng: random.Random, words: int) -> str:
    out = []
    for i in range(words):
        out.append(rng.choice(EXTRA) if rng.random() < 0.03 else rng.choice(WORDS))
        if i % 17 == 16:
            out.append(".\n")
    return " ".join(out) + "\n"


def generate(root: Path, pipelines: int, prompts: int, bases: int, seed: int = 7) -> None:
    rng = random.Random(seed)
    (root / "pipelines").mkdir(parents=True)
    (root / "prompts").mkdir()
    (root / "config.json").write_text(json.dumps({
        "model_context_window": 16384, "model_max_tokens": 1024, "development": False,
        "format_overhead_tokens": 32}))
    for i in range(prompts):
        (root / "prompts" / f"p{i:04d}.txt").write_text(_prose(rng, rng.randint(50, 1500)),
                                                         "utf-8")
    for b in range(bases):
        (root / "pipelines" / f"base{b:02d}.yaml").write_text(
            "# shared settings\n"
            "settings:\n"
            f"  max_context_tokens: {rng.randint(6000, 9000)}\n"
            f"  max_history_tokens: {rng.randint(500, 2000)}\n"
            "  budget_safety_margin_tokens: 128\n"
            "steps:\n"
            "  - id: route\n"
            "    type: call_model\n"
            f"    prompt_key: p{b:04d}\n"
            "    user_parts:\n"
            "      template: \"Question: {question}\"\n"
            "    max_output_tokens: 32\n", "utf-8")
    for i in range(pipelines):
        a, b = (2 * i) % prompts, (2 * i + 1) % prompts
        (root / "pipelines" / f"flow{i:04d}.yaml").write_text(
            f"extends: base{i % bases:02d}.yaml\n"
            "settings:\n"
            f"  max_context_tokens: {rng.randint(4000, 12000)}\n"
            f"owner: team-{i % 13}\n"
            "steps:\n"
            "  - id: retrieve\n"
            "    type: retrieve\n"
            "  - id: draft\n"
            "    type: call_model\n"
            f"    prompt_key: p{a:04d}\n"
            "    user_parts:\n"
            "      template: |\n"
            "        Context:\n"
            "        {context}\n"
            "        Question: {question}\n"
            f"    max_output_tokens: {rng.randint(256, 3000)}\n"
            "  - id: polish\n"
            "    type: call_model\n"
            f"    prompt_key: p{b:04d}\n"
            f"    use_history: {'true' if i % 3 == 0 else 'false'}\n"
            "    user_parts:\n"
            "      template: \"Polish this: {draft}\"\n"
            f"    max_tokens: {rng.randint(128, 2048)}\n", "utf-8")


def check_all(paths: list[Path], cache: BudgetCache) -> tuple[int, int, int]:
    files = DiskFiles()
    options = CheckOptions(environ={})
    steps = diags = unfit = 0
    for p in paths:
        report = check_pipeline(p, files=files, options=options, cache=cache)
        steps += len(report.steps)
        diags += len(report.diagnostics)
        unfit += sum(not s.fits for s in report.steps)
    return steps, diags, unfit


def timed(fn: Callable[..., T], *args: Any) -> tuple[float, T]:
    start = time.perf_counter()
    result = fn(*args)
    return time.perf_counter() - start, result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pipelines", type=int, default=1000)
    parser.add_argument("--prompts", type=int, default=2000)
    parser.add_argument("--bases", type=int, default=10)
    args = parser.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="budgetlens-bench-"))
    try:
        started = time.perf_counter()
        generate(tmp, args.pipelines, args.prompts, args.bases)
        paths = [p for p in find_pipelines(tmp) if p.name.startswith("flow")]
        texts = [p.read_text("utf-8") for p in sorted((tmp / "prompts").iterdir())]
        size = sum(len(t.encode()) for t in texts)
        print(f"workspace: {len(paths)} pipelines, {len(texts)} prompt files"
              f" ({size / 1e6:.1f} MB of prompts), generated in"
              f" {time.perf_counter() - started:.1f} s")
        get_tokenizer("cl100k_base")  # load the encoding outside every timing

        cache = BudgetCache()
        cold, (steps, diags, unfit) = timed(check_all, paths, cache)
        warm, _ = timed(check_all, paths, cache)
        target = tmp / "prompts" / "p0000.txt"
        target.write_text(target.read_text("utf-8") + "One more sentence.\n", "utf-8")
        one, _ = timed(check_all, paths, cache)
        n = len(paths)
        print(f"check, cold cache:          {cold:7.2f} s  ({cold / n * 1e3:6.2f} ms/pipeline;"
              f" {steps} call_model steps, {unfit} not fitting, {diags} diagnostics)")
        print(f"check, warm cache:          {warm:7.2f} s  ({warm / n * 1e3:6.2f} ms/pipeline;"
              f" {cold / warm:.0f}x faster than cold)")
        print(f"check, one prompt changed:  {one:7.2f} s  ({one / n * 1e3:6.2f} ms/pipeline)")

        tracemalloc.start()
        check_all(paths, BudgetCache())
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        rss_mb = rss / 1024 if sys.platform != "darwin" else rss / 1024 / 1024
        print(f"peak memory, cold check:    {peak / 1e6:7.1f} MB Python heap (tracemalloc);"
              f" process peak RSS {rss_mb:.0f} MB")

        encoding = get_tokenizer("cl100k_base")._encoding  # type: ignore[attr-defined]
        raw, raw_total = timed(lambda: sum(len(encoding.encode_ordinary(t)) for t in texts))
        counter = TokenCounter(get_tokenizer("cl100k_base"))
        ours_cold, ours_total = timed(lambda: sum(counter.count(t) for t in texts))
        ours_warm, _ = timed(lambda: sum(counter.count(t) for t in texts))
        assert ours_total == raw_total, (ours_total, raw_total)
        print(f"tokens of {len(texts)} prompts: {raw_total} tokens")
        print(f"  raw tiktoken encode_ordinary: {raw * 1e3:8.1f} ms  (1.00x)")
        print(f"  TokenCounter.count, cold:     {ours_cold * 1e3:8.1f} ms"
              f"  ({ours_cold / raw:.2f}x raw)")
        print(f"  TokenCounter.count, warm:     {ours_warm * 1e3:8.1f} ms"
              f"  ({ours_warm / raw:.3f}x raw)")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    assert not os.path.exists(tmp)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
