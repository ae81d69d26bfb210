"""The text output of ``budgetlens check``: it reads like a compiler's.

Each diagnostic is ``file:line:col: severity[CODE] message``, then its source line and a
caret under the range. A source line wider than 120 columns is cut to a window around the
range. ``= ...`` notes say where each term of a budget comes from. Then come each
pipeline's budget table, the target matrices, and one summary line.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, TextIO

from budgetlens import codes
from budgetlens.contract import escape
from budgetlens.files import DiskFiles, FileSource, SourceError
from budgetlens.source import ClampFix, Diagnostic, LineIndex, Range, Related, Severity

if TYPE_CHECKING:
    from budgetlens.contract.results import PipelineReport
    from budgetlens.contract.targets import TargetMatrix
    from budgetlens_cli.check_result import PipelineResult


# ---------------------------------------------------------------------------- text
#: An ASCII character is one column: a blank for each, tabs kept.
_ASCII_BLANKS = MappingProxyType({c: " " for c in range(128) if c != ord("\t")})


def _pad(prefix: str) -> str:
    """Blanks as wide on screen as ``prefix`` (tabs kept, wide characters doubled). An ASCII
    prefix in one ``translate`` (a diagnostic's line may be long and carry many diagnostics,
    each padded to its column)."""
    if prefix.isascii():
        return prefix.translate(_ASCII_BLANKS)
    return "".join("\t" if ch == "\t" else " " * display_width(ch) for ch in prefix)


def display_width(text: str) -> int:
    """``report_text.display_width``, imported when a diagnostic is printed."""
    from budgetlens.contract.report_text import display_width as width  # lazy: start-up speed

    return width(text)


#: The most columns (as ``display_width`` counts them: wide characters two, a tab one) of a
#: source line printed under a diagnostic. A longer line (a minified or flow-style pipeline, a
#: config.json or a prompt on one line) is cut to a window of this many around the diagnostic,
#: ``CUT`` marking the text left out on either side, as rustc and ruff print one.
SOURCE_COLUMNS = 120
#: The mark of source text left out of a cut line (and, on the caret line, carets under the
#: right one: the range goes on past the cut).
CUT = "..."
#: Columns of text kept before a range too wide for the window, which then shows its start.
_LEAD = 20


def _columns(ch: str) -> int:
    return 1 if ch < "\x80" else display_width(ch)


def _reach_left(text: str, end: int, columns: int) -> tuple[int, int]:
    """The first index of the longest text ending at ``end`` at most ``columns`` wide, and
    its width."""
    i, used = end, 0
    while i > 0 and used + (w := _columns(text[i - 1])) <= columns:
        i, used = i - 1, used + w
    return i, used


def _reach_right(text: str, start: int, columns: int, end: int | None = None) -> tuple[int, int]:
    """The end of the longest text starting at ``start`` (and ending by ``end``, default the
    end of ``text``) at most ``columns`` wide, and its width."""
    i, used, end = start, 0, len(text) if end is None else end
    while i < end and used + (w := _columns(text[i])) <= columns:
        i, used = i + 1, used + w
    return i, used


def _cut_line(text: str, start: int, end: int) -> tuple[str, str]:
    """A window of ``text``, a line wider than ``SOURCE_COLUMNS``, around the range
    ``start:end`` (``start < end``, or both ``len(text)``), and its caret line: ``CUT`` where
    text is left out, at most ``SOURCE_COLUMNS`` columns in all. A range that fits is shown
    whole with as much text on either side as fits (centred where the line allows); a wider one
    shows ``_LEAD`` columns before it and as much of it as fits, the carets going on under the
    right ``CUT``. Each call looks at no more than the window's characters (a line of hundreds
    of KB may carry many diagnostics)."""
    inner = SOURCE_COLUMNS - 2 * len(CUT)
    reach, span = _reach_right(text, start, inner, end)
    need = max(1, span) if reach >= end else inner + 1  # the columns of the range's carets
    if need <= inner - _LEAD:  # the range fits, with text around it
        room = inner - need
        _, before = _reach_left(text, start, room)
        _, after = _reach_right(text, end, room)
        first, used = _reach_left(text, start, min(before, max(room // 2, room - after)))
        stop, _ = _reach_right(text, end, room - used)
    else:  # wider than the window: its start, after a little text before it
        first, used = _reach_left(text, start, _LEAD)
        stop, _ = _reach_right(text, start, inner - used)
    # a side that reaches the line's end needs no mark: its columns go to the text (the line
    # is wider than the window, so the other side is cut)
    if first == 0:
        stop, _ = _reach_right(text, stop, len(CUT))
    elif stop == len(text):
        first, _ = _reach_left(text, first, len(CUT))
    left = CUT if first > 0 else ""
    right = CUT if stop < len(text) else ""
    caret = (_pad(left + text[first:start])
             + "^" * max(1, display_width(text[start:min(end, stop)]))
             + ("^" * len(CUT) if end > stop else ""))
    return left + text[first:stop] + right, caret


class SourceLines:
    """The text of the files diagnostics point into, read once each."""

    def __init__(self, files: FileSource | None = None) -> None:
        self.files = files or DiskFiles()
        self._index: dict[str, LineIndex | None] = {}

    def line(self, file: str, line: int) -> str | None:
        if file not in self._index:
            try:
                self._index[file] = LineIndex(self.files.read_text(Path(file)))
            except (SourceError, OSError):
                self._index[file] = None
        index = self._index[file]
        if index is None or line >= index.line_count:
            return None
        return index.line_text(line)


def place(file: str, rng: Range) -> str:
    """``file:line:col`` of the start of ``rng`` (1-based, as compilers print it), the name
    shown by ``file_text``."""
    return f"{file_text(file)}:{rng.start.line + 1}:{rng.start.character + 1}"


def file_text(value: str, keep: str = "") -> str:
    """``budgetlens.contract.escape.text``: a string from a file, for a line of text output."""
    return escape.text(value, keep)


def head_line(d: Diagnostic) -> str:
    """``file:line:col: severity[CODE] message``."""
    return f"{place(d.file, d.range)}: {d.severity.value}[{d.code}] {file_text(d.message)}"


def _notes(d: Diagnostic) -> list[str]:
    """The ``= ...`` lines: where each term comes from (a defaulted one says so), else the
    related places; for a violation, how to see the clamp plan."""
    terms = d.data.terms if isinstance(d.data, ClampFix) else None
    notes: list[str] = []
    if isinstance(terms, dict):
        for label, term in terms.items():
            loc = term.get("location")
            inherited = " (inherited)" if term.get("inherited") else ""
            inherited += term_origin(term)  # `from model gpt-4o (registry ...)`
            if loc is not None and term.get("value"):
                start = loc["range"]["start"]
                notes.append(f"{label}: {term['value']}{inherited} at {loc['file']}:"
                             f"{start['line'] + 1}:{start['character'] + 1}")
            elif term.get("source") == "default":
                notes.append(f"{label}: {term['value']} (default)")
    else:
        notes = [f"{r.message} at {place(r.location.file, r.location.range)}" for r in d.related]
    if d.code == codes.CONTRACT_VIOLATION:
        notes.append(f"help: `budgetlens clamp --diff {d.pipeline or d.file}` shows the clamp"
                     " plan, `--write` applies it")
    if "is not in the model registry" in d.message and "`budgetlens models" not in d.message:
        # BL061, BL012 (no window): the diagnostic suggests a name; this is how to look
        notes.append(f"help: `budgetlens models {_model_query(d.message)}` finds the"
                     " registry's names")
    return notes


def _model_query(message: str) -> str:
    """What to look for with ``budgetlens models`` for a message saying ``model 'gpt4o' is
    not in the model registry ...``: the name without its prefixes and tag, else ``""``."""
    import re  # lazy: only for an unknown model

    from budgetlens.models.resolution import query_of  # lazy: as above

    named = re.search(r"'([^'\s]+)' is not in the model registry", message)
    return query_of(named[1]) if named else ""


def format_diagnostic(d: Diagnostic, lines: SourceLines) -> str:
    start, end = d.range.start, d.range.end
    head = head_line(d)
    # a pipeline the check could not read is not quoted either (it may resolve outside
    # the workspace, a file the check refused to read)
    text = None if d.code == codes.PIPELINE_UNREADABLE else lines.line(d.file, start.line)
    if text is None:
        return head + "".join(f"\n      = {file_text(n)}" for n in _notes(d))
    last = end.character if end.line == start.line else len(text)
    last = max(min(last, len(text)), start.character + 1)
    text, start_at, last = _source_shown(text, start.character, last)
    if len(text) <= SOURCE_COLUMNS and display_width(text) <= SOURCE_COLUMNS:
        line = text
        caret = _pad(line[:start_at]) + "^" * max(1, display_width(line[start_at:last]))
    else:
        line, caret = _cut_line(text, min(start_at, len(text)), min(last, len(text)))
    gutter = f"{start.line + 1:>5} | "
    blank = " " * (len(gutter) - 2)
    notes = "".join(f"\n{blank}= {file_text(n)}" for n in _notes(d))
    return f"{head}\n{gutter}{line}\n{blank}| {caret}{notes}"


def _source_shown(text: str, start: int, last: int) -> tuple[str, int, int]:
    """A quoted source line as ``file_text`` writes it (tabs kept), and where ``start`` and
    ``last`` are in it (a ``##[`` cut at either moves the carets by at most two columns)."""
    line = file_text(text, "\t")
    if line == text:
        return text, start, last
    return line, len(file_text(text[:start], "\t")), len(file_text(text[:last], "\t"))


def full_places(diagnostics: Iterable[Diagnostic]) -> set[tuple[str, Range]]:
    """Where the diagnostics printed in full are: all but the BL023 of a child (which only
    points at its parent's error when that error is printed too: ``parent_pointer``)."""
    return {(d.file, d.range) for d in diagnostics if d.code != codes.EXTENDS_PARENT_BROKEN}


def parent_pointer(d: Diagnostic, shown: set[tuple[str, Range]]) -> Related | None:
    """For a BL023 whose parent error is printed too: that error (the child gets one line)."""
    if d.code != codes.EXTENDS_PARENT_BROKEN or not d.related:
        return None
    first = d.related[0]
    return first if (first.location.file, first.location.range) in shown else None


def write_text(out: TextIO, results: list[PipelineResult], diagnostics: list[Diagnostic],
               *, tables: bool = True, matrices: Sequence[TargetMatrix] = (),
               quiet: bool = False, colour: bool = False) -> None:
    """The text output; ``quiet``: the diagnostics only; ``colour``: with ANSI colours."""
    lines = SourceLines()
    shown = full_places(diagnostics)
    pointers = 0
    for d in diagnostics:
        parent_error = parent_pointer(d, shown)
        if parent_error is not None:  # reported once, at the parent; one line here
            pointers += 1
            where = parent_error.location
            out.write(painted(f"{head_line(d)} (see {place(where.file, where.range)})", d,
                              colour) + "\n")
            continue
        out.write(painted(format_diagnostic(d, lines), d, colour) + "\n")
    if quiet:
        return
    if diagnostics:
        out.write("\n")
    if tables:
        out.write("".join(r.fragments["tables"] for r in results))
    if matrices:
        from budgetlens_cli import targets_out  # lazy: start-up speed

        targets_out.write_text(out, matrices)
    summary = summary_line(results, diagnostics, pointers)
    out.write((f"{BOLD}{summary}{RESET}" if colour else summary) + "\n")


#: ANSI Select Graphic Rendition sequences of the coloured text output.
BOLD, RESET = "\x1b[1m", "\x1b[0m"
SEVERITY_COLOUR = MappingProxyType({Severity.ERROR: "\x1b[1;31m",
                                    Severity.WARNING: "\x1b[1;33m",
                                    Severity.INFORMATION: "\x1b[1;36m",
                                    Severity.HINT: "\x1b[1;36m"})


def painted(block: str, d: Diagnostic, colour: bool) -> str:
    """A diagnostic's printed block, coloured when ``colour``: its place bold, its severity
    and code in the severity's colour, the caret line too (the text itself is escaped
    before, so no sequence of the file's can reach the terminal)."""
    if not colour:
        return block
    head, sep, rest = block.partition("\n")
    at = place(d.file, d.range)
    tag = f"{d.severity.value}[{d.code}]"
    tint = SEVERITY_COLOUR[d.severity]
    if head.startswith(at + ": " + tag):
        head = (f"{BOLD}{at}{RESET}: {tint}{tag}{RESET}" + head[len(at) + 2 + len(tag):])
    body = rest.split("\n")
    if len(body) >= 2 and body[1].lstrip().startswith("| "):  # the caret line
        bar, _, carets = body[1].partition("| ")
        body[1] = f"{bar}| {tint}{carets}{RESET}"
    return head + sep + "\n".join(body) if sep else head


def term_origin(term: dict[str, Any]) -> str:
    """`` from model gpt-4o (registry 2026-11-23)`` for a term the registry or the server
    set (the place alone does not say it); empty for the others."""
    source = str(term.get("source", ""))
    return f" from {source}" if source.startswith(("model ", "config.json serving.")) else ""


def model_note(report: PipelineReport) -> str:
    """``, model gpt-4o`` (``≈`` counts approximate) for a pipeline that names a model."""
    if report.model is None:
        return ""
    return f", model {report.model}" + (" (≈ approximate counts)" if report.approximate
                                         else "")



def table_text(r: PipelineReport) -> str:
    """The budget table of a pipeline with steps, and its injection split if any."""
    if not r.steps:
        return ""
    # lazy for start-up speed: needed only when a pipeline was checked in this run
    from budgetlens.contract.report_text import budget_table

    window = r.window.value if r.window else "?"
    rows = [file_text(f"{r.pipeline}: window {window}, policy {r.policy.value}"
                      f" ({r.policy_source}), tokenizer {r.tokenizer}{model_note(r)}"),
            *budget_table(r)]
    rows.extend(f"  {file_text(split.step)}: {file_text(split.label)}"
                for split in (r.injection.steps if r.injection else ()))
    return "\n".join(rows) + "\n\n"


def summary_line(results: list[PipelineResult], diagnostics: list[Diagnostic],
                 pointers: int) -> str:
    """The last line: pipelines, steps, errors (a child pointing at its parent's error is not
    counted again) and warnings."""
    errors = sum(d.severity is Severity.ERROR for d in diagnostics) - pointers
    warnings = sum(d.severity is Severity.WARNING for d in diagnostics)
    others = [r for r in results if not_dotprompt(r)]
    results = [r for r in results if not not_dotprompt(r)]
    steps = sum(r.steps for r in results)
    unfit = sum(r.unfit for r in results)
    blocked = (f"; {pointers} pipeline{'s' if pointers != 1 else ''} extend"
               f"{'s' if pointers == 1 else ''} a parent with errors" if pointers else "")
    return (f"{len(results)} pipeline{'s' if len(results) != 1 else ''}, {steps} call_model"
            f" step{'s' if steps != 1 else ''} ({unfit} not fitting):"
            f" {errors} error{'s' if errors != 1 else ''},"
            f" {warnings} warning{'s' if warnings != 1 else ''}{blocked}"
            + (f"; {len(others)} .prompt file{'s' if len(others) != 1 else ''} without"
               " Dotprompt front matter not checked" if others else ""))


def not_dotprompt(r: PipelineResult) -> bool:
    """A ``.prompt`` file no reader reads (another tool's: no Dotprompt front matter). It
    is found by its name, has no step and no diagnostic: it is not a pipeline."""
    return r.pipeline.endswith(".prompt") and not r.steps and not r.diagnostics
