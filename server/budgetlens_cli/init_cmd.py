"""``budgetlens init [--model NAME] [--format FORMAT] [DIR]``: a small workspace that checks.

``--format pipeline`` (the default) writes budgetlens's own layout into DIR: ``config.json``
(the model, ``development: true`` so a step that does not fit is an error), one pipeline
``pipelines/assistant.yaml`` and its system prompt ``prompts/assistant.txt``. The other
formats write one prompt file of that format (``assistant.prompt.yml``, ``assistant.prompty``,
``assistant.prompt``), with the model spelled as that format's runtime spells it.

The budget numbers come from the model's registry entry, so ``budgetlens check`` passes with
no edit: an output limit of at most 1,024 tokens (and at most an eighth of the window), and,
for a pipeline, a context of at most 8,000 tokens (at most half the window less the output).

Nothing is written over anything: when one of the files exists (a symbolic link too), init
names it and writes nothing (exit status 2); each file is created exclusively (``O_EXCL``),
and when one cannot be, the ones created before it are removed. An unknown ``--model`` is
bad usage naming the nearest registry names and the ``budgetlens models QUERY`` to run.
"""

from __future__ import annotations

import argparse
import json
import os
from collections.abc import Mapping
from pathlib import Path
from types import MappingProxyType
from typing import Any

from budgetlens.contract.escape import text as file_text
from budgetlens.models import load_registry
from budgetlens.models.registry import ModelInfo, Registry
from budgetlens.models.resolution import query_of, search
from budgetlens_cli.main import EXIT_OK, UsageError

FORMATS = ("pipeline", "github-models", "prompty", "dotprompt")
DEFAULT_MODEL = "gpt-4o-mini"
#: The largest output limit and pipeline context init writes (smaller for a small window).
OUTPUT_TOKENS = 1024
CONTEXT_TOKENS = 8000
NAME = "assistant"
SYSTEM = "You are a helpful assistant. Answer the question in a few sentences."
QUESTION = "What is a context window?"
#: The provider prefix each prompt-file runtime puts before a model name (GitHub Models'
#: publishers, Genkit's plugins); a prefix is written only when the registry reads it back.
_GITHUB_PREFIX: Mapping[str, str] = MappingProxyType(
    {"OpenAI": "openai", "Meta": "meta", "DeepSeek": "deepseek"})
_GENKIT_PREFIX: Mapping[str, str] = MappingProxyType(
    {"OpenAI": "openai", "Google": "googleai", "Anthropic": "anthropic", "Mistral": "mistral",
     "DeepSeek": "deepseek", "Groq": "groq"})


def register(sub: Any) -> None:
    p: argparse.ArgumentParser = sub.add_parser(
        "init", help="create a small workspace (or one prompt file) that check passes",
        description="Create a small working workspace in DIR (default: the current folder):"
                    " config.json, one pipeline and its prompt; or, with --format, one prompt"
                    " file of that format. The budgets fit the model, so `budgetlens check`"
                    " passes with no edit. No existing file is ever written over.")
    p.add_argument("dir", nargs="?", default=".", metavar="DIR",
                   help="the folder to create the files in (made if missing; default .)")
    p.add_argument("--model", default=DEFAULT_MODEL, metavar="NAME",
                   help=f"a model of the registry (default {DEFAULT_MODEL}; "
                        "`budgetlens models QUERY` finds names)")
    p.add_argument("--format", choices=FORMATS, default="pipeline",
                   help="pipeline (config.json, a pipeline and a prompt: the default),"
                        " or one prompt file: github-models, prompty or dotprompt")
    p.set_defaults(run=run)


def find_model(name: str, registry: Registry | None = None) -> ModelInfo:
    """The registry's model ``name`` means (prefixes and Ollama tags resolved); UsageError
    naming the nearest names and the ``budgetlens models`` query to run when none."""
    registry = registry or load_registry()
    info = registry.get(name)
    if info is not None:
        return info
    query = query_of(name)
    nearest = search(query, registry.models, registry.folded)[:3]
    suggestion = registry.suggest(name)
    if not nearest and suggestion:
        nearest = [suggestion]
    near = f"; nearest: {', '.join(nearest)}" if nearest else ""
    raise UsageError(f"--model: {name!r} is not in the model registry ({registry.date}){near};"
                     f" run `budgetlens models {query}` to find its name")


def output_tokens(info: ModelInfo) -> int:
    """The output limit init writes: 1,024 at most, the model's own limit at most, and an
    eighth of its window at most."""
    return max(1, min(OUTPUT_TOKENS, info.max_output or OUTPUT_TOKENS, info.window // 8))


def context_tokens(info: ModelInfo) -> int:
    """A pipeline's ``max_context_tokens``: 8,000 at most, and half the window less the
    output at most (the rest is the prompt, the margin and room to grow)."""
    return max(1, min(CONTEXT_TOKENS, info.window // 2 - output_tokens(info)))


def spelled(info: ModelInfo, prefixes: Mapping[str, str], registry: Registry) -> str:
    """The model's name with its provider's prefix (``openai/gpt-4o-mini``) when the
    registry resolves that spelling back to the model, else the registry's name."""
    prefix = prefixes.get(info.provider)
    if prefix and "/" not in info.name:
        candidate = f"{prefix}/{info.name}"
        if registry.resolve(candidate) == info.name:
            return candidate
    return info.name


def pipeline_files(info: ModelInfo) -> dict[str, str]:
    """config.json, the pipeline and its prompt."""
    config = {"model": info.name, "prompts_dir": "prompts", "development": True}
    pipeline = (
        "# A one-step pipeline made by `budgetlens init`. Edit it, then run `budgetlens check`.\n"
        "settings:\n"
        f"  max_context_tokens: {context_tokens(info)}\n"
        "steps:\n"
        f"  - id: answer\n"
        "    type: call_model\n"
        f"    prompt_key: {NAME}\n"
        "    user_parts:\n"
        '      template: "{question}"\n'
        f"    max_output_tokens: {output_tokens(info)}\n")
    return {"config.json": json.dumps(config, indent=2) + "\n",
            f"pipelines/{NAME}.yaml": pipeline,
            f"prompts/{NAME}.txt": SYSTEM + "\n"}


def github_models_file(info: ModelInfo, registry: Registry) -> dict[str, str]:
    return {f"{NAME}.prompt.yml": (
        f"name: {NAME.capitalize()}\n"
        "description: Answers a question in a few sentences (made by budgetlens init).\n"
        f"model: {spelled(info, _GITHUB_PREFIX, registry)}\n"
        "modelParameters:\n"
        f"  maxCompletionTokens: {output_tokens(info)}\n"
        "messages:\n"
        "  - role: system\n"
        f"    content: {SYSTEM}\n"
        "  - role: user\n"
        "    content: '{{question}}'\n"
        "testData:\n"
        f"  - question: {QUESTION}\n")}


def prompty_file(info: ModelInfo) -> dict[str, str]:
    provider = {"OpenAI": "  provider: openai\n",
                "Anthropic": "  provider: anthropic\n"}.get(info.provider, "")
    return {f"{NAME}.prompty": (
        "---\n"
        f"name: {NAME}\n"
        "description: Answers a question in a few sentences (made by budgetlens init).\n"
        "model:\n"
        f"  id: {info.name}\n"
        f"{provider}"
        "  apiType: chat\n"
        "  options:\n"
        f"    maxOutputTokens: {output_tokens(info)}\n"
        "inputs:\n"
        "  - name: question\n"
        "    kind: string\n"
        f"    default: {QUESTION}\n"
        "---\n"
        "system:\n"
        f"{SYSTEM}\n"
        "\n"
        "user:\n"
        "{{question}}\n")}


def dotprompt_file(info: ModelInfo, registry: Registry) -> dict[str, str]:
    return {f"{NAME}.prompt": (
        "---\n"
        f"model: {spelled(info, _GENKIT_PREFIX, registry)}\n"
        "config:\n"
        f"  maxOutputTokens: {output_tokens(info)}\n"
        "input:\n"
        "  schema:\n"
        "    question: string\n"
        "  default:\n"
        f"    question: {QUESTION}\n"
        "---\n"
        '{{role "system"}}\n'
        f"{SYSTEM}\n"
        '{{role "user"}}\n'
        "{{question}}\n")}


def files_of(fmt: str, info: ModelInfo, registry: Registry) -> dict[str, str]:
    """The files of ``fmt`` (relative path -> text) for model ``info``."""
    if fmt == "github-models":
        return github_models_file(info, registry)
    if fmt == "prompty":
        return prompty_file(info)
    if fmt == "dotprompt":
        return dotprompt_file(info, registry)
    return pipeline_files(info)


def create_all(root: Path, files: dict[str, str]) -> list[Path]:
    """Create every file under ``root``, or none: UsageError naming a file that exists (or
    one that cannot be created; the ones created before it are removed)."""
    targets = [(root / rel, text) for rel, text in files.items()]
    for path, _ in targets:
        if os.path.lexists(path):
            raise UsageError(f"{file_text(str(path))} exists; init never writes over a file"
                             " (nothing was written)")
    created: list[Path] = []
    for path, text in targets:
        try:
            _create(path, text)
        except OSError as exc:
            for done in created:
                done.unlink(missing_ok=True)
            raise UsageError(f"{_refusal(path, exc)} (nothing was written)") from None
        created.append(path)
    return created


def _create(path: Path, text: str) -> None:
    """Write ``text`` to the new file ``path`` (its folder made if missing); OSError when the
    file exists (``O_EXCL``, a symbolic link included) or cannot be written whole (then it
    is removed)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0),
                 0o666)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as out:
            out.write(text)
    except OSError:
        path.unlink(missing_ok=True)
        raise


def _refusal(path: Path, exc: OSError) -> str:
    """Why ``path`` was not created, naming what stood in the way."""
    where = exc.filename if isinstance(exc.filename, str) else str(path)
    if isinstance(exc, FileExistsError) and where == str(path):
        return f"{file_text(where)} exists; init never writes over a file"
    if isinstance(exc, (FileExistsError, NotADirectoryError)):
        return f"{file_text(where)} is not a folder"
    return f"{file_text(where)} cannot be created: {exc.strerror or exc}"


def run(args: argparse.Namespace) -> int:
    registry = load_registry()
    info = find_model(args.model, registry)
    root = Path(args.dir)
    created = create_all(root, files_of(args.format, info, registry))
    for path in created:
        print(f"created {file_text(str(path))}")
    where = "" if args.dir == "." else f" {file_text(args.dir)}"
    print(f"model {info.name}: window {info.window:,} tokens; next: budgetlens check{where}")
    return EXIT_OK
