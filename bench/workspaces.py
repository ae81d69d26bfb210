"""The generated pipelines the benchmarks share (bench_lsp, bench_engine, bench_yaml): one
config.json, prompt files of made-up words, and ``call_model`` steps written the same way."""

from __future__ import annotations

import json
from pathlib import Path

WINDOW = 8192
OUTPUT = 1024
CONTEXT = 3000


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
