"""What the readers share: located values, output limits, workspace-bound references and
the problems every format reports the same way."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from budgetlens.files import DiskFiles, FileSource, SourceError, is_inside
from budgetlens.formats.frontmatter import FileYaml
from budgetlens.formats.model import (
    Located,
    Message,
    OutputLimit,
    Problem,
    ProblemKind,
    needs_completion_tokens,
)
from budgetlens.source import Range

Path_ = tuple[str | int, ...]


def dotted(path: Path_) -> str:
    return ".".join(str(part) for part in path)


def located(fy: FileYaml | None, *path: str | int) -> Located | None:
    """The value at ``path`` with its range, or ``None`` when it is not written."""
    if fy is None or not fy.has(*path):
        return None
    return Located(fy.get(*path), dotted(path), fy.range(*path))


def output_limit(fy: FileYaml | None, candidates: Sequence[Path_],
                 default: Path_) -> OutputLimit:
    """The first of ``candidates`` written as an integer; else where ``default`` would go
    (its nearest written parent mapping, else the whole document)."""
    if fy is not None:
        for path in candidates:
            value = fy.get(*path)
            if isinstance(value, int) and not isinstance(value, bool):
                return OutputLimit(value, dotted(path), fy.range(*path), fy.key_range(*path))
    insert: Range | None = None
    if fy is not None:
        insert = fy.whole()
        for cut in range(len(default) - 1, 0, -1):
            if isinstance(fy.get(*default[:cut]), dict):
                insert = fy.range(*default[:cut])
                break
    return OutputLimit(None, dotted(default), None, None, insert)


def check_completion_tokens(model: Located | None, output: OutputLimit,
                            problems: list[Problem]) -> None:
    """``max_tokens`` (or a key the runtime sends as ``max_tokens``) on a reasoning model."""
    if model is None or not isinstance(model.value, str) or output.value is None:
        return
    last = output.key.rsplit(".", 1)[-1]
    if last in ("max_tokens", "maxTokens") and needs_completion_tokens(model.value):
        problems.append(Problem(
            ProblemKind.NEEDS_COMPLETION_TOKENS,
            f"{model.value} refuses max_tokens and wants max_completion_tokens: '{output.key}'"
            " is sent as max_tokens", output.key_range or output.range or Range.at(0, 0)))


def check_declared(messages: Sequence[Message], declared: Sequence[str] | None,
                   problems: list[Problem], skip: Sequence[str] = ()) -> None:
    """A variable a message reads that the file's inputs do not declare."""
    if declared is None:
        return
    seen: set[str] = set()
    for message in messages:
        for name in message.variables:
            if name in declared or name in skip or name in seen:
                continue
            seen.add(name)
            problems.append(Problem(ProblemKind.VARIABLE_UNDECLARED,
                                    f"'{name}' is used in the template but not declared in"
                                    " the inputs", message.range))


def read_inside(path: Path, root: Path | None,
                files: FileSource | None) -> tuple[str | None, str | None]:
    """The text of ``path`` if it is inside ``root`` (real paths) and readable: (text,
    None), else (None, why)."""
    if root is None:
        return None, f"'{path}' not read: no workspace root"
    if not is_inside(path, root):
        return None, f"'{path}' is outside the workspace; not read"
    try:
        return (files or DiskFiles()).read_text(path), None
    except SourceError as exc:
        return None, str(exc)
