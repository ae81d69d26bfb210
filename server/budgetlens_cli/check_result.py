"""One pipeline's result as ``budgetlens check`` keeps and prints it: ``PipelineResult``.

A result holds what every output format needs: the diagnostics, the step counts, and the
rendered pieces (``fragments``) of the formats that need more. The result cache stores it
between runs. A fresh run and a cached one print from it, so both print the same bytes.
``check_run`` makes results; ``check_formats`` and ``check_text`` print them.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from budgetlens.source import Diagnostic

if TYPE_CHECKING:
    from budgetlens.contract.targets import TargetMatrix


@dataclass
class PipelineResult:
    """What the output needs of one pipeline: its diagnostics, step counts and the rendered
    pieces of the formats used so far (``FRAGMENT``). The CLI cache keeps it between runs;
    both a fresh and a cached run print from it, so their outputs are the same bytes."""

    pipeline: str
    diagnostics: tuple[Diagnostic, ...]
    steps: int
    unfit: int
    fragments: dict[str, Any] = field(default_factory=dict)
    matrix: TargetMatrix | None = None
    """The pipeline against every target (``--target`` or config.json's ``targets``), when it
    has targets; kept in the result cache with the rest (the targets are part of its key,
    config.json is one of the pipeline's inputs)."""


#: The piece of a pipeline's output each format needs (the others need only diagnostics).
FRAGMENT = MappingProxyType({"text": "tables", "json": "steps", "junit": "junit"})


def fragment_of(args: argparse.Namespace) -> str | None:
    if args.format == "text" and getattr(args, "no_table", False):
        return None
    return FRAGMENT.get(args.format)
