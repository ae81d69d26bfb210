"""The floor of ``budgetlens check`` on prompt files: the same work with nothing but the libraries.

    python bench/floor_formats.py WORKSPACE

Reads what a check of the prompt files below WORKSPACE reads, each file once: every GitHub
Models (``*.prompt.yml``, ``*.prompt.yaml``), Prompty (``*.prompty``) and Dotprompt
(``*.prompt``) file (hidden and dependency folders skipped, Dotprompt partials ``_name.prompt``
not checked alone, as budgetlens finds them), and each Dotprompt partial a file includes
(``{{>name}}``: ``_name.prompt`` in the file's folder or a parent inside WORKSPACE). Loads the
YAML (the whole file, or the front matter between ``---`` lines) with libyaml
(``yaml.CSafeLoader``); cuts a body into its messages with one regular expression (Prompty's
role lines, Dotprompt's ``{{role "..."}}``); counts each message's text with tiktoken
(``encode_ordinary``; ``cl100k_base`` for gpt-4 and gpt-3.5, ``o200k_base`` for every other
model, as budgetlens counts OpenAI models and approximates Gemini), the encodings built from
the rank files budgetlens ships, loaded by tiktoken's own ``load_tiktoken_bpe`` when first
needed. No templates rendered, no positions, no validation, no diagnostics, no output beyond
one line of totals (so none of the work can be skipped).
"""

from __future__ import annotations

import json
import os
import re
import sys
from typing import Any

from floor_check import ENCODINGS, SKIP

SUFFIXES = (".prompt.yml", ".prompt.yaml", ".prompty", ".prompt")
_FRONT = re.compile(r"\A---[ \t]*\r?\n(.*?)^---[ \t]*\r?\n?", re.DOTALL | re.MULTILINE)
_PROMPTY_ROLE = re.compile(r"^\s*(?:system|user|assistant|developer)\s*:\s*$",
                           re.MULTILINE | re.IGNORECASE)
_DOTPROMPT_ROLE = re.compile(r"\{\{~?\s*(?:role\s+\"[a-z]+\"|history)\s*~?\}\}")
_PARTIAL = re.compile(r"\{\{>\s*([\w.-]+)")


def find_prompt_files(root: str) -> list[str]:
    found = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith(".") and d not in SKIP)
        found.extend(os.path.join(dirpath, n) for n in filenames if n.endswith(SUFFIXES)
                     and not (n.startswith("_") and n.endswith(".prompt")))
    return sorted(found)


def model_name(doc: Any) -> str:
    """The model a file names (GitHub Models, Prompty v1 and v2, Dotprompt), or ``""``."""
    if not isinstance(doc, dict):
        return ""
    model = doc.get("model")
    if isinstance(model, dict):
        conf = model.get("configuration")
        if isinstance(conf, dict):
            model = conf.get("model") or conf.get("azure_deployment")
        else:
            model = model.get("id")
    return model if isinstance(model, str) else ""


def encoding_name(model: str) -> str:
    name = model.rsplit("/", 1)[-1].lower()
    return "cl100k_base" if name == "gpt-4" or name.startswith(("gpt-4-", "gpt-3.5")) \
        else "o200k_base"


def main(root: str) -> int:
    os.environ["TIKTOKEN_CACHE_DIR"] = ""  # tiktoken reads the file, writes no cache of it
    import tiktoken
    import yaml
    from tiktoken.load import load_tiktoken_bpe

    meta = json.loads((ENCODINGS / "encodings.json").read_text("utf-8"))["encodings"]
    encodings: dict[str, Any] = {}

    def encoding(name: str) -> Any:
        if name not in encodings:
            encodings[name] = tiktoken.Encoding(
                name=name, pat_str=meta[name]["pat_str"],
                mergeable_ranks=load_tiktoken_bpe(str(ENCODINGS / meta[name]["file"])),
                special_tokens=meta[name]["special_tokens"])
        return encodings[name]

    texts: dict[str, str] = {}

    def read(path: str) -> str:
        if path not in texts:
            with open(path, encoding="utf-8") as fh:
                texts[path] = fh.read()
        return texts[path]

    def partial(folder: str, name: str) -> str:
        top = os.path.abspath(root)
        while True:
            path = os.path.join(folder, f"_{name}.prompt")
            if os.path.isfile(path):
                return read(path)
            if os.path.abspath(folder) == top or os.path.dirname(folder) == folder:
                return ""
            folder = os.path.dirname(folder)

    files = messages = tokens = 0
    for path in find_prompt_files(root):
        text = read(path)
        files += 1
        if path.endswith((".prompt.yml", ".prompt.yaml")):
            doc = yaml.load(text, Loader=yaml.CSafeLoader)
            parts = [m.get("content") or "" for m in (doc.get("messages") or [])
                     if isinstance(m, dict)] if isinstance(doc, dict) else []
        else:
            match = _FRONT.match(text)
            doc = yaml.load(match.group(1), Loader=yaml.CSafeLoader) if match else None
            body = text[match.end():] if match else text
            if path.endswith(".prompty"):
                parts = _PROMPTY_ROLE.split(body)
            else:
                folder = os.path.dirname(path)
                body = _PARTIAL.sub(lambda m: partial(folder, m.group(1)), body)  # noqa: B023
                parts = _DOTPROMPT_ROLE.split(body)
        enc = encoding(encoding_name(model_name(doc)))
        for part in parts:
            if isinstance(part, str) and part.strip():
                messages += 1
                tokens += len(enc.encode_ordinary(part))
    print(f"{files} prompt files, {len(texts) - files} partials, {messages} messages,"
          f" {tokens} tokens")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1] if len(sys.argv) > 1 else "."))
