"""``models.json``: a workspace's or a user's corrections and additions to the registry.

Two files are read, the user's first (``$XDG_CONFIG_HOME/budgetlens/models.json``, else
``~/.config/budgetlens/models.json``), then the workspace's (``models.json`` next to
config.json); the workspace's wins. Each holds::

    {"models": {"gpt-4o": {"window": 32768},
                "my-finetune": {"window": 16384, "max_output": 2048, "tokenizer": "llama3"}}}

An entry for a name the registry knows (also as a tag or with a provider prefix) replaces
the fields it sets; another name is a new model and needs ``window``. Every value keeps
where it was written (``ModelInfo.origins``), so a check says ``window: 32768 from
models.json:3:15``. A wrong value is BL069 at the value and is not used.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from budgetlens import codes
from budgetlens.contract.near_miss import check_mapping
from budgetlens.files import FileMissing, FileSource, OutsideRoot, SourceError
from budgetlens.models.registry import ModelInfo, Registry, with_entries
from budgetlens.source import Diagnostic, Location, Range, Severity
from budgetlens.yamldoc.parse import YamlDocument, parse_yaml

MODELS_NAME = "models.json"
#: The fields an entry may set, each an integer > 0 except ``tokenizer``.
LIMIT_KEYS = ("window", "max_input", "max_output")
ENTRY_KEYS = (*LIMIT_KEYS, "tokenizer", "provider")
#: The registry's tokenizer families (docs/models.md, "Which counts are exact").
TOKENIZERS = ("o200k_base", "cl100k_base", "llama3", "llama4", "qwen", "deepseek", "mistral",
              "claude", "gemini", "unknown")


@dataclass(frozen=True)
class Entry:
    """One entry of a models.json: its valid values, each with where it was written."""

    name: str
    values: tuple[tuple[str, Any], ...]
    origins: tuple[tuple[str, Location], ...]
    location: Location


@dataclass(frozen=True)
class ModelsFile:
    """A models.json as read: its valid entries and what is wrong in it."""

    path: str
    entries: tuple[Entry, ...]
    diagnostics: tuple[Diagnostic, ...] = ()


def user_models_path(environ: Any) -> str | None:
    """The user's models.json (``$XDG_CONFIG_HOME/budgetlens/models.json``, else
    ``$HOME/.config/budgetlens/models.json``); ``None`` without either variable."""
    base = environ.get("XDG_CONFIG_HOME") or (
        os.path.join(environ["HOME"], ".config") if environ.get("HOME") else None)
    return os.path.join(base, "budgetlens", MODELS_NAME) if base else None


def workspace_models_path(config_path: str, named: str | None = None) -> str:
    """The workspace's models.json: ``named`` (config.json ``models_file``, relative to
    config.json), else ``models.json`` next to config.json."""
    folder = os.path.dirname(config_path) or "."
    return os.path.normpath(os.path.join(folder, named or MODELS_NAME))


class _Reader:
    def __init__(self, path: str, doc: YamlDocument | None) -> None:
        self.path, self.doc = path, doc
        self.diags: list[Diagnostic] = []

    def where(self, *keys: str) -> Location:
        rng = self.doc.value_range(keys) if self.doc is not None else None
        return Location(self.path, rng or Range.at(0, 0))

    def bad(self, message: str, *keys: str) -> None:
        loc = self.where(*keys)
        self.diags.append(Diagnostic(loc.file, loc.range, Severity.ERROR,
                                     codes.MODELS_FILE_INVALID,
                                     f"{os.path.basename(self.path)} {message}"))

    def value(self, name: str, key: str, raw: Any) -> Any:
        """The value of ``key`` of entry ``name`` if valid (else BL069 and ``None``)."""
        if key in LIMIT_KEYS:
            if isinstance(raw, int) and not isinstance(raw, bool) and raw > 0:
                return raw
            if raw is None and key != "window":
                return None
            self.bad(f"models.{name}.{key} must be a whole number > 0, got {raw!r};"
                     " the registry's value is used", "models", name, key)
        elif key == "tokenizer":
            if raw in TOKENIZERS:
                return raw
            self.bad(f"models.{name}.tokenizer must be one of {', '.join(TOKENIZERS)},"
                     f" got {raw!r}; the registry's value is used", "models", name, key)
        elif isinstance(raw, str) and raw:
            return raw
        else:
            self.bad(f"models.{name}.{key} must be a text, got {raw!r}", "models", name, key)
        return _INVALID

    def entry(self, name: str, raw: Any) -> Entry | None:
        if not isinstance(raw, dict):
            self.bad(f"models.{name} must be an object of limits ({', '.join(ENTRY_KEYS)}),"
                     f" got {type(raw).__name__}", "models", name)
            return None
        self.diags.extend(replace(d, severity=Severity.ERROR, message=d.message +
                                  " (a limit the file does not set: the registry's is used)")
                          for d in check_mapping(self.path, self.doc, ("models", name),
                                                 ENTRY_KEYS))
        values = {k: self.value(name, k, raw[k]) for k in ENTRY_KEYS if k in raw}
        kept = tuple((k, v) for k, v in values.items() if v is not _INVALID)
        return Entry(name, kept, tuple((k, self.where("models", name, k)) for k, _ in kept),
                     self.where("models", name))


_INVALID = object()


def _read(path: str, text: str, reader: _Reader) -> dict[str, Any] | None:
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        reader.diags.append(Diagnostic(path, Range.at(max(exc.lineno - 1, 0),
                                                      max(exc.colno - 1, 0)), Severity.ERROR,
                                       codes.MODELS_FILE_INVALID,
                                       f"{os.path.basename(path)} is not valid JSON:"
                                       f" {exc.msg}; none of its entries is used"))
        return None
    except (ValueError, RecursionError) as exc:
        reader.bad(f"cannot be read ({type(exc).__name__}); none of its entries is used")
        return None
    models = data.get("models") if isinstance(data, dict) else None
    if not isinstance(models, dict):
        reader.bad('must hold a JSON object with a "models" object (model name -> limits);'
                   " none of its entries is used", *(("models",) if isinstance(data, dict)
                                                     and "models" in data else ()))
        return None
    return models


def load_models_file(path: str, text: str) -> ModelsFile:
    """Read the text of a models.json."""
    doc, _ = parse_yaml(text)  # JSON is YAML: the positions of the values, best effort
    reader = _Reader(path, doc)
    models = _read(path, text, reader)
    entries = [reader.entry(str(name), raw) for name, raw in (models or {}).items()]
    return ModelsFile(path, tuple(e for e in entries if e is not None), tuple(reader.diags))


def _bad(loc: Location, message: str) -> Diagnostic:
    return Diagnostic(loc.file, loc.range, Severity.ERROR, codes.MODELS_FILE_INVALID,
                      f"{os.path.basename(loc.file)} {message}")


def _made(entry: Entry, base: Registry, out: list[Diagnostic]) -> ModelInfo | None:
    """The model ``entry`` makes over ``base`` (``None``, with BL069, when it cannot)."""
    values = dict(entry.values)
    known = base.get(entry.name)
    if known is None and "window" not in values:
        out.append(_bad(entry.location, f"models.{entry.name} is not in the model registry"
                                        " and sets no window: a new model needs one"))
        return None
    if known is None:
        info = ModelInfo(name=entry.name, provider=values.get("provider", "models.json"),
                         window=values["window"], max_input=values.get("max_input"),
                         max_output=values.get("max_output"),
                         tokenizer=values.get("tokenizer", "unknown"),
                         source=entry.location.file, date=base.date, origins=entry.origins)
    else:
        info = replace(known, **values, origins=known.origins + entry.origins)
    for key in ("max_input", "max_output"):
        value = getattr(info, key)
        if value is None or value <= info.window:
            continue
        if key in values:  # the file's own value: an error at it
            out.append(_bad(dict(entry.origins)[key], f"models.{entry.name}.{key} {value:,}"
                                                      f" is above the window"
                                                      f" {info.window:,}: not used"))
        # else the registry's limit above a window the file lowered: the window is the limit
        info = replace(info, max_input=None) if key == "max_input" else \
            replace(info, max_output=None)
    return info


def overlay(base: Registry, files: list[ModelsFile]
            ) -> tuple[Registry, tuple[Diagnostic, ...]]:
    """``base`` with the entries of ``files`` (later files win), and what could not be
    used."""
    registry, out = base, list[Diagnostic]()
    for loaded in files:
        entries: dict[str, ModelInfo] = {}
        for entry in loaded.entries:
            info = _made(entry, registry, out)
            if info is not None:
                entries[info.name] = info
        registry = with_entries(registry, entries)
    return registry, tuple(out)


def read_models_file(path: str, files: FileSource) -> ModelsFile | None:
    """The models.json at ``path`` (``None`` when there is none); raises ``OutsideRoot``
    when ``files`` refuses it."""
    try:
        text = files.read_text(Path(path))
    except FileMissing:
        return None
    except OutsideRoot:
        raise  # the caller decides (the user's own file is read from disk)
    except SourceError as exc:
        return unreadable_models_file(path, exc)
    return load_models_file(path, text)


def unreadable_models_file(path: str, exc: SourceError) -> ModelsFile:
    return ModelsFile(path, (), (Diagnostic(path, Range.at(0, 0), Severity.ERROR,
                                            codes.MODELS_FILE_INVALID,
                                            f"{os.path.basename(path)} cannot be read: {exc};"
                                            " none of its entries is used"),))
