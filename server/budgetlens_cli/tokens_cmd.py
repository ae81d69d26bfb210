"""``budgetlens tokens FILE... [--tokenizer NAME]``: token counts per file.

Each file is counted with the tokenizer ``check`` would use for it: the ``tokenizer`` of the
config.json found at or above the file (standard input: at or above the current folder),
else the tokenizer of the registry model its ``model`` names, else ``cl100k_base``;
``--tokenizer`` overrides it for every file. The output says which
tokenizer counted and where it came from.
"""

from __future__ import annotations

import argparse
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from budgetlens import DiskFiles, TokenCounter, TokenizerError, get_tokenizer
from budgetlens.contract.config import find_config
from budgetlens.contract.limits import config_limits
from budgetlens.files import MAX_FILE_BYTES
from budgetlens.tokens.core import DEFAULT_TOKENIZER
from budgetlens_cli.io import read_text_arg
from budgetlens_cli.main import EXIT_OK, UsageError


def register(sub: Any) -> None:
    p: argparse.ArgumentParser = sub.add_parser(
        "tokens", help="count the tokens of files",
        description="Print the token count of each FILE ('-' reads standard input), with the"
                    " tokenizer of the config.json at or above it unless --tokenizer is given.")
    p.add_argument("files", nargs="+", metavar="FILE")
    p.add_argument("--tokenizer", default=None,
                   help="encoding name, model name or tokenizer.json path (default: the"
                        " tokenizer of the config.json at or above each FILE, else"
                        f" {DEFAULT_TOKENIZER})")
    p.add_argument("--format", choices=("text", "json"), default="text")
    p.set_defaults(run=run)


@dataclass(frozen=True)
class _Choice:
    counter: TokenCounter
    source: str  # "--tokenizer", "ws/config.json", or "default"
    model: str | None = None  # the registry model of config.json that chose the tokenizer
    approximate: bool = False  # that model's counts are approximate (docs/models.md)

    @property
    def label(self) -> str:
        if self.source == "default":
            return f"{self.counter.name} (default: no tokenizer in a config.json at or above)"
        if self.source == "--tokenizer":
            return f"{self.counter.name} (--tokenizer)"
        if self.model is not None:
            approximate = "; ≈ approximate counts" if self.approximate else ""
            return f"{self.counter.name} (model {self.model} of {self.source}{approximate})"
        return f"{self.counter.name} (tokenizer of {self.source})"


class _Tokenizers:
    """The tokenizer of each file, loaded once per config.json."""

    def __init__(self, override: str | None) -> None:
        self.override = override
        self._by_config: dict[str | None, _Choice] = {}
        self._files = DiskFiles()

    def _make(self, spec: str | None, source: str, base_dir: Path | None,
              model: str | None = None, approximate: bool = False) -> _Choice:
        try:
            return _Choice(TokenCounter(get_tokenizer(spec, base_dir=base_dir)), source, model,
                           approximate)
        except TokenizerError as exc:
            where = "--tokenizer" if source == "--tokenizer" else f"{source}: tokenizer"
            raise UsageError(f"{where}: {exc}") from None

    def for_file(self, name: str) -> _Choice:
        if self.override is not None:
            if None not in self._by_config:
                self._by_config[None] = self._make(self.override, "--tokenizer", None)
            return self._by_config[None]
        start = "." if name == "-" else (os.path.dirname(name) or ".")
        loaded, _ = find_config(start, self._files)
        cfg = loaded.config if loaded is not None else None
        if loaded is not None and cfg is not None and cfg.tokenizer is None and cfg.model:
            limits = config_limits(loaded)  # the model's tokenizer, as check counts with
            if limits.tokenizer is not None and limits.model is not None:
                if loaded.path not in self._by_config:
                    self._by_config[loaded.path] = self._make(
                        limits.tokenizer, loaded.path, None, limits.model.name,
                        limits.approximate)
                return self._by_config[loaded.path]
        if loaded is None or cfg is None or cfg.tokenizer is None:
            key = "default"
            if key not in self._by_config:
                self._by_config[key] = self._make(DEFAULT_TOKENIZER, "default", None)
            return self._by_config[key]
        if loaded.path not in self._by_config:
            self._by_config[loaded.path] = self._make(cfg.tokenizer, loaded.path,
                                                      Path(loaded.directory))
        return self._by_config[loaded.path]


def run(args: argparse.Namespace) -> int:
    tokenizers = _Tokenizers(args.tokenizer)
    rows: list[tuple[str, int, _Choice]] = []
    for name in args.files:
        choice = tokenizers.for_file(name)
        text = read_text_arg(name, MAX_FILE_BYTES)  # the cap of a prompt file in check
        try:
            rows.append((name, choice.counter.count(text), choice))
        except TokenizerError as exc:
            raise UsageError(f"{name}: {exc}") from None
    labels = list(dict.fromkeys(c.label for _, _, c in rows))
    if args.format == "json":
        names = list(dict.fromkeys(c.counter.name for _, _, c in rows))
        print(json.dumps({"tokenizer": names[0] if len(names) == 1 else None,
                          "files": [{"file": f, "tokens": n, "tokenizer": c.counter.name,
                                     "tokenizer_source": c.source} for f, n, c in rows],
                          "total": sum(n for _, n, _ in rows)}, indent=2))
        return EXIT_OK
    total = sum(n for _, n, _ in rows)
    width = len(f"{total:,}")
    mixed = len(labels) > 1
    for name, n, choice in rows:
        print(f"{n:>{width},}  {name}" + (f"  [{choice.counter.name}]" if mixed else ""))
    if len(rows) > 1:
        print(f"{total:>{width},}  total")
    for label in labels:
        print(f"tokenizer: {label}")
    return EXIT_OK
