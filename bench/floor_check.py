"""The floor of ``budgetlens check``: the same work with nothing but the libraries.

    python bench/floor_check.py WORKSPACE

Reads what a check reads, each file once: every ``pipelines/*.yaml`` below WORKSPACE (and
``*.yml``, hidden and dependency folders skipped, as budgetlens finds them), the ``extends``
parent of each, config.json, and every prompt file a ``call_model`` step names; parses the YAML
with libyaml (``yaml.CSafeLoader``) and config.json with ``json.loads``; counts each prompt's
tokens with tiktoken (``encode_ordinary``, the encoding built from the rank file budgetlens
ships, loaded by tiktoken's own ``load_tiktoken_bpe``). No positions, no validation, no
diagnostics, no output beyond one line of totals (so none of the work can be skipped).
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

ENCODINGS = Path(__file__).resolve().parents[1] / "shared_core" / "budgetlens" / "tokens" \
    / "encodings"
SKIP = {"node_modules", "__pycache__", "site-packages"}


def find_pipelines(root: str) -> list[str]:
    found = []
    for dirpath, dirnames, _ in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith(".") and d not in SKIP)
        if "pipelines" in dirnames:
            folder = os.path.join(dirpath, "pipelines")
            found.extend(os.path.join(folder, n) for n in os.listdir(folder)
                         if n.endswith((".yaml", ".yml")))
    return sorted(found)


def main(root: str) -> int:
    os.environ["TIKTOKEN_CACHE_DIR"] = ""  # tiktoken reads the file, writes no cache of it
    import tiktoken
    import yaml
    from tiktoken.load import load_tiktoken_bpe

    meta = json.loads((ENCODINGS / "encodings.json").read_text("utf-8"))["encodings"]
    encoding = tiktoken.Encoding(
        name="cl100k_base", pat_str=meta["cl100k_base"]["pat_str"],
        mergeable_ranks=load_tiktoken_bpe(str(ENCODINGS / "cl100k_base.tiktoken")),
        special_tokens=meta["cl100k_base"]["special_tokens"])
    with open(os.path.join(root, "config.json"), encoding="utf-8") as fh:
        config = json.loads(fh.read())
    prompts_dir = os.path.join(root, config.get("prompts_dir", "prompts"))
    parsed: dict[str, Any] = {}

    def load(path: str) -> Any:
        if path not in parsed:
            with open(path, encoding="utf-8") as fh:
                parsed[path] = yaml.load(fh.read(), Loader=yaml.CSafeLoader)
        return parsed[path]

    prompts: set[str] = set()
    steps = 0
    for path in find_pipelines(root):
        doc = load(path)
        chain = [doc]
        while isinstance(chain[-1], dict) and chain[-1].get("extends"):
            chain.append(load(os.path.join(os.path.dirname(path), chain[-1]["extends"])))
        for part in chain:
            for step in (part.get("steps") or []) if isinstance(part, dict) else []:
                if isinstance(step, dict) and step.get("type") == "call_model":
                    steps += 1
                    if step.get("prompt_key"):
                        prompts.add(os.path.join(prompts_dir, f"{step['prompt_key']}.txt"))
    tokens = 0
    for prompt in sorted(prompts):
        with open(prompt, encoding="utf-8") as fh:
            tokens += len(encoding.encode_ordinary(fh.read()))
    print(f"{len(parsed)} YAML files, {steps} call_model steps, {len(prompts)} prompts,"
          f" {tokens} tokens")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1] if len(sys.argv) > 1 else "."))
