"""``budgetlens schema [pipeline|config] [--output FILE]``: the JSON Schema of pipeline files
(the default) or of config.json."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from budgetlens.contract.json_schema import config_json_schema_text, pipeline_json_schema_text
from budgetlens_cli.main import EXIT_OK, UsageError


def register(sub: Any) -> None:
    p: argparse.ArgumentParser = sub.add_parser(
        "schema", help="print the JSON Schema of pipeline files or of config.json",
        description="Print the JSON Schema (draft-07) of budgetlens pipeline files (the"
                    " default) or of config.json, generated from the core's models. Editors"
                    " use it for completion and checks: add '# yaml-language-server:"
                    " $schema=<path of the file>' to a pipeline, or a \"$schema\" key to"
                    " config.json (docs/schemas.md).")
    p.add_argument("kind", nargs="?", choices=("pipeline", "config"), default="pipeline",
                   help="pipeline: pipelines/*.yaml (default); config: config.json")
    p.add_argument("--output", "-o", metavar="FILE",
                   help="write the schema to FILE instead of standard output")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    text = config_json_schema_text() if args.kind == "config" else pipeline_json_schema_text()
    if not args.output:
        sys.stdout.write(text)
        return EXIT_OK
    target = Path(args.output)
    try:
        target.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise UsageError(f"cannot write {args.output}: {exc.strerror or exc}") from None
    return EXIT_OK
