"""The CI output formats of ``budgetlens check``: ``github``, ``gitlab`` and ``junit``.

- ``github``: GitHub Actions workflow commands, one line per diagnostic
  (``::error file=F,line=L,col=C,endLine=L2,endColumn=C2,title=BL050::message``), so each
  one shows as an annotation on its line. Values are escaped as GitHub's toolkit
  (``@actions/core``) does: ``%``, ``\\r`` and ``\\n`` everywhere, ``:`` and ``,`` in the
  properties too.
- ``gitlab``: a GitLab Code Quality report, a JSON array of issues. The ``fingerprint`` is the
  SHA-256 of the code, the path, the step and the key path of the YAML node the issue points
  at (never the line, never the message), so an issue keeps its fingerprint when unrelated
  lines move and when its numbers change (a prompt grows by some tokens); a repeat of the
  same four gets its occurrence number hashed in too, so fingerprints stay unique.
- ``junit``: JUnit XML, one ``<testsuite>`` per pipeline, one ``<testcase>`` per ``call_model``
  step (a ``<failure>`` when the step does not fit or has an error) and one more testcase,
  ``(file)``, for the pipeline's errors that belong to no step.

Every string that comes from a file (paths, step ids, messages) passes the rule of its
format in ``budgetlens.contract.escape`` (XML 1.0's characters for JUnit).

Paths are shown relative to the current folder where the file lies below it (as ruff does).
"""

from __future__ import annotations

import bisect
import hashlib
import os
from collections.abc import Iterable
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from budgetlens.contract import escape
from budgetlens.source import Diagnostic, Severity, unique_diagnostics

if TYPE_CHECKING:
    import xml.etree.ElementTree as ET

    from budgetlens.contract.results import PipelineReport

GITHUB_COMMAND = MappingProxyType({Severity.ERROR: "error", Severity.WARNING: "warning",
                                   Severity.INFORMATION: "notice", Severity.HINT: "notice"})
GITLAB_SEVERITY = MappingProxyType({Severity.ERROR: "major", Severity.WARNING: "minor",
                                    Severity.INFORMATION: "info", Severity.HINT: "info"})
FILE_CASE = "(file)"


def relative_path(file: str) -> str:
    """``file`` relative to the current folder (``/`` separators) when it lies below it,
    else as given."""
    try:
        rel = os.path.relpath(os.path.abspath(file))
    except ValueError:  # another drive on Windows
        return Path(file).as_posix()
    if rel == ".." or rel.startswith(".." + os.sep):
        return Path(file).as_posix()
    return Path(rel).as_posix()


# ---------------------------------------------------------------------------- GitHub
#: ``@actions/core``'s ``escapeData`` and ``escapeProperty`` (after ``escape.visible``).
escape_data = escape.github_data
escape_property = escape.github_property


def github_line(d: Diagnostic) -> str:
    start, end = d.range.start, d.range.end
    props = [("file", relative_path(d.file)), ("line", str(start.line + 1)),
             ("col", str(start.character + 1)), ("endLine", str(end.line + 1)),
             ("endColumn", str(end.character + 1)), ("title", d.code)]
    joined = ",".join(f"{key}={escape_property(value)}" for key, value in props)
    return f"::{GITHUB_COMMAND[d.severity]} {joined}::{escape_data(d.message)}"


def github_output(diagnostics: Iterable[Diagnostic]) -> str:
    return "".join(github_line(d) + "\n" for d in diagnostics)


# ---------------------------------------------------------------------------- GitLab
def fingerprint(code: str, path: str, step: str, key_path: str, occurrence: int = 1) -> str:
    """SHA-256 (hex) of ``code``, ``path``, ``step`` and ``key_path`` joined by NUL (UTF-8;
    a lone surrogate as ``surrogatepass`` writes it); from the second occurrence of
    the same four on, ``\\0<occurrence>`` is appended before hashing."""
    text = "\0".join((code, path, step, key_path))
    if occurrence > 1:
        text += f"\0{occurrence}"
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


_Place = tuple[int, int]  # (line, character)
_YamlPath = tuple[Any, ...]


class KeyPaths:
    """The key path (``steps.2.max_output_tokens``) of the YAML node a diagnostic points at:
    the deepest node (a mapping entry from its key to the end of its value) holding its
    start; empty for a file that is not a YAML or JSON mapping (a prompt) or cannot be read.
    Each file is parsed and indexed once; a look-up is a binary search, then a walk up the
    path (the nodes nest: the node starting last at or before a place is inside the deepest
    one holding it)."""

    def __init__(self) -> None:
        self._nodes: dict[str, tuple[list[tuple[_Place, int]], list[_YamlPath],
                                     dict[_YamlPath, tuple[_Place, _Place]]] | None] = {}

    def _index(self, file: str) -> tuple[list[tuple[_Place, int]], list[_YamlPath],
                                         dict[_YamlPath, tuple[_Place, _Place]]] | None:
        if file in self._nodes:
            return self._nodes[file]
        from budgetlens.files import DiskFiles, SourceError  # lazy: start-up speed
        from budgetlens.yamldoc.parse import parse_yaml  # lazy: only gitlab and sarif

        doc = None
        if file.endswith((".yaml", ".yml", ".json")):
            try:
                doc, _ = parse_yaml(DiskFiles().read_text(Path(file)))
            except (SourceError, OSError):  # unreadable now: no key path
                doc = None
        found = None
        if doc is not None:
            spans: dict[_YamlPath, tuple[_Place, _Place]] = {}
            for path, span in doc.spans.items():
                start = (span.key or span.value).start
                end = span.value.end
                spans[path] = ((start.line, start.character), (end.line, end.character))
            order = sorted(spans, key=lambda p: (spans[p][0], len(p)))
            found = ([(spans[p][0], len(p)) for p in order], order, spans)
        self._nodes[file] = found
        return found

    def of(self, d: Diagnostic) -> str:
        index = self._index(d.file)
        if index is None:
            return ""
        starts, paths, spans = index
        at = (d.range.start.line, d.range.start.character)
        i = bisect.bisect_right(starts, (at, 1 << 30)) - 1
        path: _YamlPath = paths[i] if i >= 0 else ()
        while path:
            node = spans.get(path)
            if node is not None and node[0] <= at < node[1]:
                break
            path = path[:-1]
        return ".".join(str(part) for part in path)


def gitlab_output(diagnostics: Iterable[Diagnostic]) -> list[dict[str, Any]]:
    seen: dict[tuple[str, str, str, str], int] = {}
    keys = KeyPaths()
    issues = []
    for d in diagnostics:
        path = relative_path(d.file)
        key = (d.code, path, d.step or "", keys.of(d))
        seen[key] = seen.get(key, 0) + 1
        issues.append({
            "description": d.message,
            "check_name": d.code,
            "fingerprint": fingerprint(*key, occurrence=seen[key]),
            "severity": GITLAB_SEVERITY[d.severity],
            "location": {"path": path,
                         "lines": {"begin": d.range.start.line + 1,
                                   "end": d.range.end.line + 1}},
        })
    return issues


# ---------------------------------------------------------------------------- JUnit
def _head(d: Diagnostic) -> str:
    start = d.range.start
    return (f"{escape.xml_text(relative_path(d.file))}:{start.line + 1}:{start.character + 1}:"
            f" {d.severity.value}[{d.code}] {escape.xml_text(d.message)}")


def _testcase(suite: ET.Element, name: str, failing: list[Diagnostic],
              unfit: str | None = None, others: Iterable[Diagnostic] = ()) -> bool:
    """Add a testcase; a ``<failure>`` when ``failing`` has diagnostics or ``unfit`` says why
    it does not fit; ``others`` (warnings that do not fail) in its ``<system-out>``. True
    when it failed."""
    import xml.etree.ElementTree as ET  # lazy: start-up speed (the JUnit output only)

    case = ET.SubElement(suite, "testcase", classname=suite.get("name", ""),
                         name=escape.xml_text(name))
    shown = [_head(d) for d in others]
    if shown:
        ET.SubElement(case, "system-out").text = "\n".join(shown)
    if not failing and unfit is None:
        return False
    lines = [_head(d) for d in failing] or [unfit or ""]
    first = failing[0] if failing else None
    failure = ET.SubElement(case, "failure",
                            message=escape.xml_text(first.message) if first else lines[0],
                            type=first.code if first else "does-not-fit")
    failure.text = "\n".join(lines)
    if shown:  # the failure before the output, as the JUnit schema orders them
        case.remove(failure)
        case.insert(0, failure)
    return True


#: A step of a JUnit suite as the result cache keeps it: its name, whether it fits and, when
#: it does not, why (the ``does-not-fit`` failure of a step without an error).
JunitStep = tuple[str, bool, "str | None"]


def junit_steps(report: PipelineReport) -> tuple[JunitStep, ...]:
    """The steps of a pipeline's testsuite (``junit_suite_of`` makes it)."""
    out: list[JunitStep] = []
    for step in report.steps:
        name, fits = step.summary.step, step.summary.fits
        unfit = None if fits else (f"step '{escape.xml_text(name)}' does not fit the context"
                                   f" window (headroom {step.summary.budget.headroom})")
        out.append((name, fits, unfit))
    return tuple(out)


def junit_suite(report: PipelineReport) -> tuple[ET.Element, int]:
    """The testsuite of one pipeline (its own errors and those of the files it reads, such as
    a parent's) and the number of its failed testcases."""
    return junit_suite_of(report.pipeline, junit_steps(report), report.diagnostics)


def junit_suite_of(pipeline: str, steps: Iterable[JunitStep],
                   diagnostics: Iterable[Diagnostic], fail_on: Severity = Severity.ERROR,
                   hidden: Iterable[str | None] = ()) -> tuple[ET.Element, int]:
    """The testsuite of one pipeline and its number of failed testcases: a diagnostic at
    ``fail_on`` or worse fails its step's testcase (or ``(file)``'s); a warning below it is
    written to the testcase's ``<system-out>``. A step that does not fit fails as it did,
    unless its BL050/BL052 was suppressed or deselected (its name in ``hidden``)."""
    import xml.etree.ElementTree as ET  # lazy, as in _testcase

    mine = unique_diagnostics(diagnostics)
    failing = [d for d in mine if _rank(d.severity) <= _rank(fail_on)]
    others = [d for d in mine if d not in failing and d.severity is Severity.WARNING]
    steps = tuple(steps)
    names = [name for name, _, _ in steps]
    hidden = frozenset(hidden)
    suite = ET.Element("testsuite", name=escape.xml_text(relative_path(pipeline)))
    failed = 0
    for name, fits, unfit in steps:
        why = None if fits or name in hidden else unfit
        failed += _testcase(suite, name, [d for d in failing if d.step == name], why,
                            [d for d in others if d.step == name])
    failed += _testcase(suite, FILE_CASE, [d for d in failing if d.step not in names], None,
                        [d for d in others if d.step not in names])
    suite.attrib.update(tests=str(len(names) + 1), failures=str(failed), errors="0",
                        skipped="0")
    return suite, failed


_RANKS = MappingProxyType({Severity.ERROR: 0, Severity.WARNING: 1, Severity.INFORMATION: 2,
                           Severity.HINT: 3})


def _rank(severity: Severity) -> int:
    return _RANKS[severity]


def junit_output(reports: list[PipelineReport]) -> str:
    return junit_document([(junit_suite(r), len(r.steps) + 1) for r in reports])


def junit_document(suites: list[tuple[tuple[ET.Element, int], int]]) -> str:
    """The JUnit XML of the testsuites (each with its failures) and their test counts."""
    import xml.etree.ElementTree as ET  # lazy, as in _testcase

    root = ET.Element("testsuites", name="budgetlens")
    failed = 0
    for (suite, failures), _ in suites:
        root.append(suite)
        failed += failures
    tests = sum(count for _, count in suites)
    root.attrib.update(tests=str(tests), failures=str(failed), errors="0")
    ET.indent(root, space="  ")
    return ('<?xml version="1.0" encoding="UTF-8"?>\n'
            + ET.tostring(root, encoding="unicode") + "\n")
