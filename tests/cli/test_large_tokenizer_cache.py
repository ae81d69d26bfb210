"""The result cache knows a tokenizer.json above the 8 MiB text cap by its bytes, not its size
(a prompt that large is refused whatever it holds; a tokenizer file is read whole by its
library, and Llama 3's is 9 MB): replaced by another tokenizer of the same size, the counts
are the new file's. Real ``budgetlens check`` processes over one cache folder."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

from budgetlens.files import MAX_FILE_BYTES
from tests.tokenizer_files import tokenizer_json

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def _padded(text: str, size: int) -> str:
    """``text`` (a JSON object) with JSON whitespace before its last brace, ``size`` long."""
    return text[:-1] + " " * (size - len(text)) + text[-1]


def _system_prompt(ws: Path, cache: Path) -> int:
    proc = subprocess.run([sys.executable, "-m", "budgetlens_cli", "check",
                           "pipelines/chat.yaml", "--format", "json", "--cache-dir", str(cache)],
                          cwd=ws, capture_output=True, text=True, timeout=300)
    [step] = json.loads(proc.stdout)["steps"]
    return int(step["budget"]["system_prompt"])


def test_a_large_tokenizer_replaced_by_one_of_the_same_size_counts_anew(
        tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    shutil.copytree(EXAMPLES, ws)
    config = json.loads((ws / "config.json").read_text("utf-8"))
    config["tokenizer"] = "tokenizer.json"
    (ws / "config.json").write_text(json.dumps(config), "utf-8")
    (ws / "prompts/chat.txt").write_text("alpha beta gamma", "utf-8")
    size = MAX_FILE_BYTES + 4096
    words, characters = (_padded(tokenizer_json(per_character=c), size) for c in (False, True))
    assert len(words.encode()) == len(characters.encode()) == size
    (ws / "tokenizer.json").write_text(words, "utf-8")
    cache = tmp_path / "cache"
    assert _system_prompt(ws, cache) == 3
    assert _system_prompt(ws, cache) == 3  # from the cache
    new = ws / "new.json"
    new.write_text(characters, "utf-8")
    os.replace(new, ws / "tokenizer.json")
    assert _system_prompt(ws, cache) == 16
