"""The generated pipelines the benchmarks share (bench_lsp, bench_engine, bench_yaml): one
config.json, prompt files of made-up words, and ``call_model`` steps written the same way.
Also the seeded prose of bench_check's prompt files and bench_formats' messages."""

from __future__ import annotations

import json
import random
from pathlib import Path

WINDOW = 8192
OUTPUT = 1024
CONTEXT = 3000

_PROSE = ("the budget of every step must fit the context window so retrieval history and"
          " output share what is left after the system prompt template overhead and safety"
          " margin customer order refund shipping parcel tracking invoice policy answer question")
PROSE_WORDS = _PROSE.split(" ")
EXTRA = ["予算", "トークン", "上下文", "🚀", "📦", "café", "naïve", "Größe"]


def prose(rng: random.Random, words: int) -> str:
    """``words`` words of English prose with some CJK and emoji, 17 to a sentence line."""
    out = []
    for i in range(words):
        out.append(rng.choice(EXTRA) if rng.random() < 0.03 else rng.choice(PROSE_WORDS))
        if i % 17 == 16:
            out.append(".\n")
    return " ".join(out) + "\n"


def words(n: int, seed: int) -> str:
    vocabulary = ("budget", "context", "window", "tokens", "history", "prompt", "model", "step",
                  "output", "margin", "pipeline", "summary", "answer", "question", "evidence",
                  "retrieve", "rank", "verify", "format", "json")
    return " ".join(vocabulary[(i * 7 + seed) % len(vocabulary)] for i in range(n))


def write_config(root: Path) -> None:
    (root / "prompts").mkdir(parents=True)
    (root / "pipelines").mkdir()
    (root / "config.json").write_text(json.dumps({
        "model_context_window": WINDOW, "model_max_tokens": OUTPUT, "prompts_dir": "prompts",
        "development": True}, indent=2) + "\n")


def step_yaml(index: int, prompt: str, history: bool) -> str:
    return (f"  - id: step_{index:04d}\n"
            f"    type: call_model\n"
            f"    prompt_key: {prompt}\n"
            f"    use_history: {'true' if history else 'false'}\n"
            f"    user_parts:\n"
            f"      template: \"Question {{question}} with {{context}} ({index})\"\n"
            f"    max_output_tokens: {512 + index % 256}\n")


def make_big(root: Path, steps: int = 500, levels: int = 5) -> Path:
    """A pipeline of ``steps`` steps at the end of an extends chain of ``levels`` files; every
    50th step uses a huge prompt and is over budget."""
    write_config(root)
    for i in range(20):
        (root / "prompts" / f"p{i:02d}.txt").write_text(words(40 + 15 * i, i) + "\n")
    (root / "prompts" / "huge.txt").write_text(words(4200, 99) + "\n")
    (root / "pipelines" / "base0.yaml").write_text(
        "settings:\n  max_context_tokens: 2500\n  max_history_tokens: 400\n"
        "  budget_safety_margin_tokens: 100\n")
    for level in range(1, levels):
        (root / "pipelines" / f"base{level}.yaml").write_text(
            f"extends: base{level - 1}.yaml\nsettings:\n"
            f"  max_history_tokens: {400 + 50 * level}\n")
    body = "".join(step_yaml(i, "huge" if i % 50 == 0 else f"p{i % 20:02d}", i % 3 == 0)
                   for i in range(steps))
    big = root / "pipelines" / "big.yaml"
    big.write_text(f"extends: base{levels - 1}.yaml\nsettings:\n"
                   f"  max_context_tokens: {CONTEXT}\nsteps:\n{body}")
    return big


def make_many(root: Path, count: int = 1000, shared_by: int = 200
              ) -> tuple[Path, list[Path]]:
    """``count`` pipelines (4 steps each, extending one base); the first ``shared_by`` use
    prompts/shared.txt. Returns that prompt and its users."""
    write_config(root)
    for i in range(50):
        (root / "prompts" / f"other{i:02d}.txt").write_text(words(30 + 9 * i, i) + "\n")
    shared = root / "prompts" / "shared.txt"
    shared.write_text("revision 0000\n" + words(300, 3) + "\n")
    (root / "pipelines" / "base.yaml").write_text(
        f"settings:\n  max_context_tokens: {CONTEXT}\n  max_history_tokens: 500\n"
        "  budget_safety_margin_tokens: 128\n")
    users = []
    for p in range(count):
        uses_shared = p < shared_by
        body = "".join(step_yaml(s, "shared" if uses_shared and s == 1
                                 else f"other{(p + s) % 50:02d}", s == 2) for s in range(4))
        path = root / "pipelines" / f"p{p:04d}.yaml"
        path.write_text(f"extends: base.yaml\nsteps:\n{body}")
        if uses_shared:
            users.append(path)
    return shared, users
