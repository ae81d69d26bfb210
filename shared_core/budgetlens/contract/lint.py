"""Which diagnostics are shown: code selection and suppression comments, as ruff has them.

- **Selection** (``LintSettings``): ``select``, ``extend_select`` and ``ignore`` name codes
  (``BL050``), prefixes (``BL05``, ``BL0``) or ``ALL``. Every code is selected by default.
  Within one layer the most specific selector that matches a code decides (``--select BL05
  --ignore BL050`` keeps BL051); on a tie ``ignore`` wins. A layer with ``select`` starts
  from nothing; one without keeps what the layer below it chose. config.json's ``lint``
  block is the lower layer, the command line the upper one. ``per_file_ignores`` maps a
  glob (relative to the folder of the config.json that sets it) to codes off in the files
  it matches.
- **Suppression comments**: ``# budgetlens: ignore[BL050, BL061]`` (or a bare ``#
  budgetlens: ignore``) on a line of a YAML file turns off those codes (or all) for the
  diagnostics that start on that line. Only YAML is read for them: pipeline and GitHub
  Models files (``.yaml``, ``.yml``) whole, Prompty and Dotprompt files (``.prompty``,
  ``.prompt``) in their front matter only, since their body is the prompt. A prompt text
  file is sent to the model as it is, so a comment in it would be counted; a diagnostic
  about a prompt is written on the pipeline line that names it, and is suppressed there.
  config.json is strict JSON (no comments): its diagnostics are turned off with
  ``per_file_ignores``.
- **Unused suppressions**: a comment that suppressed nothing (or names a code that
  suppressed nothing on its line) is a BL080 warning at the comment; BL080 is itself
  subject to selection.

``apply_lint`` is the function the CLI calls. The language server calls ``lint_pass``
after each analysis: the same result, file by file, with each file's part kept and reused
while its diagnostics, comments and settings are the same.
"""

from __future__ import annotations

import fnmatch
import json
import operator
import os
import re
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field

from budgetlens import codes
from budgetlens.source import Diagnostic, Range, Severity

ALL = "ALL"
#: The files read for suppression comments: YAML, and prompt files with YAML front matter.
COMMENT_SUFFIXES = (".yaml", ".yml", ".prompty", ".prompt")
#: The prompt files whose front matter alone is YAML (their body is the prompt).
FRONT_MATTER_SUFFIXES = (".prompty", ".prompt")
#: ``# budgetlens: ignore`` and ``# budgetlens: ignore[CODES]``: a YAML comment starts at the
#: line's start or after a blank.
SUPPRESSION = re.compile(r"(?:^|(?<=[ \t]))#[ \t]*budgetlens:[ \t]*ignore\b(?:\[([^\]\n]*)\])?")
_CODE_SHAPE = re.compile(r"BL\d{0,3}")


#: The keys of config.json's ``lint`` block.
LINT_KEYS = ("select", "extend_select", "ignore", "per_file_ignores")


class LintError(ValueError):
    """A selector that names no code (the message names the nearest one)."""


def known_selector(selector: str) -> bool:
    """Whether ``selector`` is ``ALL``, a code or a prefix of a code."""
    if selector == ALL:
        return True
    return bool(_CODE_SHAPE.fullmatch(selector)) and any(
        code.startswith(selector) for code in codes.CODES)


def check_selectors(selectors: Iterable[str], where: str) -> tuple[str, ...]:
    """``selectors`` as given (upper case, blanks stripped); ``LintError`` for one that
    names no code, with the nearest code."""
    out: list[str] = []
    for raw in selectors:
        selector = raw.strip().upper()
        if not selector:
            continue
        if not known_selector(selector):
            raise LintError(f"{where}: unknown code {raw.strip()!r}{_nearest(selector)}")
        out.append(selector)
    return tuple(out)


def _nearest(selector: str) -> str:
    """`` (did you mean BL050?)``: a code of the same length with the fewest characters
    changed (a typed O for a 0), else the closest by ``difflib``."""
    same = [(sum(a != b for a, b in zip(code, selector, strict=True)), code)
            for code in codes.CODES if len(code) == len(selector)]
    best = min(same, default=None)
    if best is not None and best[0] <= 1:
        return f" (did you mean {best[1]}?)"
    import difflib  # lazy: start-up speed (only an unknown code needs it)

    near = difflib.get_close_matches(selector, [*codes.CODES, ALL], n=1, cutoff=0.5)
    return f" (did you mean {near[0]}?)" if near else " (`budgetlens rule` lists the codes)"


def split_codes(values: Iterable[str]) -> list[str]:
    """Comma-separated option values, each part (``--select BL05,BL061``)."""
    return [part for value in values for part in value.split(",") if part.strip()]


@dataclass(frozen=True)
class Layer:
    """One layer of selection (config.json's ``lint``, or the command line)."""

    select: tuple[str, ...] | None = None
    extend_select: tuple[str, ...] = ()
    ignore: tuple[str, ...] = ()

    def decide(self, code: str, below: bool) -> bool:
        """Whether ``code`` is on after this layer, ``below`` what the layer under it chose."""
        on = (*(self.select or ()), *self.extend_select)
        best_on = max((_weight(s) for s in on if _matches(s, code)), default=-1)
        best_off = max((_weight(s) for s in self.ignore if _matches(s, code)), default=-1)
        if best_on < 0 and best_off < 0:
            return below if self.select is None else False
        return best_on > best_off


def _weight(selector: str) -> int:
    return 0 if selector == ALL else len(selector)


def _matches(selector: str, code: str) -> bool:
    return selector == ALL or code.startswith(selector)


@dataclass(frozen=True)
class LintSettings:
    """Selection layers (lowest first) and per-file ignores (glob, codes) relative to
    ``base``."""

    layers: tuple[Layer, ...] = ()
    per_file_ignores: tuple[tuple[str, tuple[str, ...]], ...] = ()
    base: str = ""
    _selected: dict[str, bool] = field(default_factory=dict, compare=False, repr=False)
    """``selected`` of each code asked (a run asks the same few codes many times)."""

    def with_layer(self, layer: Layer) -> LintSettings:
        return LintSettings((*self.layers, layer), self.per_file_ignores, self.base)

    def selected(self, code: str) -> bool:
        got = self._selected.get(code)
        if got is None:
            got = True
            for layer in self.layers:
                got = layer.decide(code, got)
            self._selected[code] = got
        return got

    def enabled(self, code: str, path: str) -> bool:
        """Whether a diagnostic of ``code`` in the file ``path`` is shown."""
        if not self.selected(code):
            return False
        return not self.per_file_ignores or not any(any(_matches(s, code) for s in off)
                       for glob, off in self.per_file_ignores if self._globbed(glob, path))

    def _globbed(self, glob: str, path: str) -> bool:
        rel = os.path.relpath(os.path.abspath(path), os.path.abspath(self.base or "."))
        rel = rel.replace(os.sep, "/")
        return fnmatch.fnmatchcase(rel, glob) or (
            "/" not in glob and fnmatch.fnmatchcase(os.path.basename(path), glob))


def settings_from_config(data: object, config_path: str) -> LintSettings:
    """The ``lint`` block of a config.json's data (``{}`` when absent); ``LintError`` for a
    block of the wrong shape or an unknown code."""
    where = f"{_shown(config_path)}: lint"
    base = os.path.dirname(config_path)
    block = data.get("lint") if isinstance(data, Mapping) else None
    if block is None:
        return LintSettings(base=base)
    if not isinstance(block, Mapping):
        raise LintError(f"{where}: expected an object with select, ignore, extend_select,"
                        " per_file_ignores")
    for key in block:
        if key not in LINT_KEYS:
            import difflib  # lazy: start-up speed (only a misspelt key needs it)

            near = difflib.get_close_matches(str(key), LINT_KEYS, n=1)
            hint = f" (did you mean {near[0]}?)" if near else f" (known: {', '.join(LINT_KEYS)})"
            raise LintError(f"{where}: unknown key {key!r}{hint}")
    select = block.get("select")
    layer = Layer(
        None if select is None else check_selectors(_strings(select, f"{where}.select"),
                                                     f"{where}.select"),
        check_selectors(_strings(block.get("extend_select", []), f"{where}.extend_select"),
                        f"{where}.extend_select"),
        check_selectors(_strings(block.get("ignore", []), f"{where}.ignore"),
                        f"{where}.ignore"))
    files = block.get("per_file_ignores", {})
    if not isinstance(files, Mapping):
        raise LintError(f"{where}.per_file_ignores: expected an object of glob: [codes]")
    per_file = tuple((str(glob), check_selectors(_strings(off, f"{where}.per_file_ignores"),
                                                 f"{where}.per_file_ignores[{glob!r}]"))
                     for glob, off in files.items())
    return LintSettings((layer,), per_file, base)


def _shown(path: str) -> str:
    """``path`` relative to the current folder when it lies below it (as the diagnostics
    print it), else as given."""
    try:
        rel = os.path.relpath(path)
    except (ValueError, OSError):  # another drive; no current folder
        return path
    return path if rel == ".." or rel.startswith(".." + os.sep) else rel


class ConfigLint:
    """The settings of each file: the ``lint`` block of its config.json (``explicit``, or the
    nearest at or above the file's folder) under ``layer`` (the command line's), one per
    folder. ``text_of`` reads a config.json (None: unreadable, no block). A bad block raises
    ``LintError`` (``strict``), else counts as absent (the editor: the check reports the
    file's own problems). ``memo`` keeps each block read, for the next pass."""

    def __init__(self, text_of: Callable[[str], str | None], explicit: str | None = None,
                 layer: Layer | None = None, strict: bool = True,
                 memo: LintMemo | None = None) -> None:
        self.text_of = text_of
        self.explicit = explicit
        self.layer = layer
        self.strict = strict
        self.memo = memo if memo is not None else LintMemo()
        self._by_folder: dict[str, LintSettings] = {}
        self._by_path: dict[str, LintSettings] = {}
        #: Each config.json whose bad block counted as absent (not ``strict``): its error.
        self.errors: dict[str, LintError] = {}

    def __call__(self, path: str) -> LintSettings:
        got = self._by_path.get(path)
        if got is None:
            got = self._by_path[path] = self.in_folder(self.memo.folder(path))
        return got

    def in_folder(self, folder: str) -> LintSettings:
        """The settings of the files of ``folder`` (an absolute path)."""
        got = self._by_folder.get(folder)
        if got is None:
            got = self._by_folder[folder] = self._of(folder)
        return got

    def _of(self, folder: str) -> LintSettings:
        config = self.explicit or nearest_config(folder)
        settings = LintSettings(base=os.path.dirname(config) if config else "")
        if config is not None:
            try:
                settings = self.memo.block(config, self.text_of(config))
            except LintError as exc:
                if self.strict:
                    raise
                self.errors[config] = exc
        return settings if self.layer is None else settings.with_layer(self.layer)

    def problems(self) -> list[Diagnostic]:
        """A BL013 error at the ``lint`` key of each config.json read whose block is bad
        and so was not applied (the editor; ``strict`` raises instead)."""
        return [block_diagnostic(path, self.text_of(path) or "", exc)
                for path, exc in sorted(self.errors.items())]


class LintMemo:
    """What one lint pass read, kept for the next while each text is the same: the
    suppression comments of each file and the ``lint`` block of each config.json. The
    language server lints every file after each analysis, and most texts have not changed.
    Entries of files a pass did not read are dropped, so it holds one workspace at most."""

    def __init__(self) -> None:
        self._comments: dict[str, tuple[str, list[Suppression]]] = {}
        self._blocks: dict[str, tuple[str | None, LintSettings | LintError]] = {}
        #: each file's part of the last ``lint_pass``
        self._parts: dict[str, _Part] = {}
        #: the folder of each absolute path asked (``folder``)
        self._folders: dict[str, str] = {}
        #: the paths ``folders`` was last asked for, and their folders
        self._folders_of: tuple[frozenset[str], set[str]] = (frozenset(), set())

    def folder(self, path: str) -> str:
        """The absolute folder of ``path`` (kept for an absolute path)."""
        got = self._folders.get(path)
        if got is None:
            got = os.path.dirname(os.path.abspath(path))
            if os.path.isabs(path):
                if len(self._folders) > 2 * len(self._parts) + 1024:
                    self._folders.clear()
                self._folders[path] = got
        return got

    def folders(self, paths: Collection[str]) -> set[str]:
        """The folders of ``paths`` (``os.path.dirname``), kept while the paths are the same:
        the server asks for those of every pipeline after each analysis."""
        kept, found = self._folders_of
        if kept != paths:
            found = {os.path.dirname(p) for p in paths}
            self._folders_of = (frozenset(paths), found)
        return found

    def comments(self, path: str, text: str) -> list[Suppression]:
        """The suppression comments of ``path`` whose text is ``text``."""
        got = self._comments.get(path)
        if got is None or got[0] != text:
            got = self._comments[path] = (text, suppressions(comment_text(path, text)))
        return got[1]

    def block(self, config: str, text: str | None) -> LintSettings:
        """The settings of the ``lint`` block of ``config`` whose text is ``text`` (None:
        unreadable); ``LintError`` for a bad block."""
        got = self._blocks.get(config)
        if got is None or got[0] != text:
            try:
                data = json.loads(text) if text else None
            except ValueError:  # the check reports it (BL011)
                data = None
            try:
                found: LintSettings | LintError = settings_from_config(data, config)
            except LintError as exc:
                found = exc
            got = self._blocks[config] = (text, found)
        if isinstance(got[1], LintError):
            raise got[1]
        return got[1]

    def keep(self, paths: Iterable[str]) -> None:
        """Drop the comments of every file but ``paths`` (those the last pass read)."""
        kept = set(paths)
        for path in [p for p in self._comments if p not in kept]:
            del self._comments[path]


def block_diagnostic(config_path: str, text: str, error: LintError) -> Diagnostic:
    """The BL013 error of a bad ``lint`` block, over its key in ``text`` (the file's start
    when it cannot be found)."""
    from budgetlens.yamldoc.parse import parse_yaml  # lazy: start-up (only a bad block)

    doc, _ = parse_yaml(text)  # JSON is YAML: the key's position
    span = doc.spans.get(("lint",)) if doc is not None else None
    rng = (span.key or span.value) if span is not None else Range.at(0, 0)
    message = str(error).split(": ", 1)[-1] if ": lint" in str(error) else str(error)
    return Diagnostic(config_path, rng, Severity.ERROR, codes.CONFIG_VALUE_INVALID,
                      f"config.json {message}; the lint block is not applied")


def nearest_config(folder: str) -> str | None:
    """The nearest config.json at or above ``folder`` (as ``budgetlens check`` finds it)."""
    current = folder
    for _ in range(256):
        candidate = os.path.join(current, "config.json")
        if os.path.isfile(candidate):
            return candidate
        parent = os.path.dirname(current)
        if parent == current:
            return None
        current = parent
    return None


def _strings(value: object, where: str) -> list[str]:
    if isinstance(value, str):
        return split_codes([value])
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return split_codes(value)
    raise LintError(f"{where}: expected a list of codes")


@dataclass(frozen=True)
class Suppression:
    """One ``# budgetlens: ignore`` comment: its line, range and codes (None: all)."""

    line: int
    range: Range
    codes: tuple[str, ...] | None
    unknown: tuple[str, ...] = ()


def suppressions(text: str) -> list[Suppression]:
    """The suppression comments of a YAML text, in order."""
    if "budgetlens:" not in text:
        return []
    found: list[Suppression] = []
    for number, line in enumerate(text.splitlines()):
        match = SUPPRESSION.search(line)
        if match is None:
            continue
        rng = Range.at(number, match.start(), number, match.end())
        if match.group(1) is None:
            found.append(Suppression(number, rng, None))
            continue
        named = [c.strip().upper() for c in re.split(r"[,\s]+", match.group(1)) if c.strip()]
        known = tuple(c for c in named if known_selector(c) and c != ALL)
        found.append(Suppression(number, rng, known,
                                 tuple(c for c in named if c not in known)))
    return found


def reads_comments(path: str) -> bool:
    return path.endswith(COMMENT_SUFFIXES)


def comment_text(path: str, text: str) -> str:
    """The part of ``text`` that may hold suppression comments: all of a YAML file; the
    front matter of a Prompty or Dotprompt file (up to its closing ``---``; nothing when it
    has none), whose body is prompt text sent to the model."""
    if not path.endswith(FRONT_MATTER_SUFFIXES):
        return text
    lines = text.splitlines(keepends=True)
    if not lines or lines[0].strip() != "---":
        return ""
    for end in range(1, len(lines)):
        if lines[end].strip() == "---":
            return "".join(lines[:end])
    return ""


@dataclass
class _Used:
    """The codes each comment of a file suppressed."""

    comments: list[Suppression]
    used: list[set[str]] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.used = [set() for _ in self.comments]

    def suppress(self, d: Diagnostic) -> bool:
        hit = False
        for n, comment in enumerate(self.comments):
            if comment.line != d.range.start.line:
                continue
            named = [c for c in comment.codes or (d.code,) if _matches(c, d.code)]
            if named:
                self.used[n].update(named)
                hit = True
        return hit


def apply_lint(diagnostics: Sequence[Diagnostic], settings_for: Callable[[str], LintSettings],
               text_of: Callable[[str], str | None], scanned: Iterable[str] = (),
               memo: LintMemo | None = None) -> list[Diagnostic]:
    """``diagnostics`` without those that are off (selection, per-file ignores) or
    suppressed by a comment on their line, then a BL080 warning for each comment of the
    files read (those of the diagnostics and ``scanned``) that suppressed nothing or named
    a code that suppressed nothing. ``settings_for(path)`` gives a file's settings,
    ``text_of(path)`` its text (None when unreadable: no comments). ``memo`` keeps the
    comments read, for the next pass."""
    files: dict[str, _Used] = {}
    read = memo if memo is not None else LintMemo()

    def comments(path: str) -> _Used:
        used = files.get(path)
        if used is None:
            text = text_of(path) if reads_comments(path) else None
            found = read.comments(path, text) if text else []
            used = files[path] = _Used(found) if found else _NO_COMMENTS
        return used

    kept = [d for d in diagnostics if settings_for(d.file).enabled(d.code, d.file)
            and not comments(d.file).suppress(d)]
    kept = _without_hidden_parents(diagnostics, kept)
    for path in scanned:
        comments(path)
    read.keep(files)
    for path, used in files.items():
        if used.comments:
            kept.extend(_unused(path, used, settings_for(path)))
    return kept


#: The comments of a file with none: shared, since nothing is ever marked used in it.
_NO_COMMENTS = _Used([])
#: No suppression comments (never changed).
_NONE: list[Suppression] = []


@dataclass
class _Part:
    """One file's part of a lint pass: its diagnostics left and its BL080 warnings, with
    what they were made from (reused while those are the same objects)."""

    version: object
    scanned: bool
    comments: list[Suppression]
    diagnostics: tuple[Diagnostic, ...]
    settings: LintSettings | None
    kept: list[Diagnostic]
    warnings: list[Diagnostic]

    def same(self, scanned: bool, comments: list[Suppression],
             diagnostics: tuple[Diagnostic, ...], settings: LintSettings | None) -> bool:
        return (self.scanned is scanned
                and (self.comments is comments or not (self.comments or comments))
                and len(self.diagnostics) == len(diagnostics)
                and all(map(operator.is_, self.diagnostics, diagnostics))
                and (self.settings is settings or self.settings == settings))


def lint_pass(diagnostics: Sequence[Diagnostic], settings_for: Callable[[str], LintSettings],
              text_of: Callable[[str], str | None], scanned: Mapping[str, object],
              memo: LintMemo) -> list[Diagnostic]:
    """``apply_lint`` for the language server, which lints after every analysis: the same
    diagnostics, in the same order within each file (not across files). ``scanned`` maps
    each file read for comments to its version: the same object as the last pass's while
    the file's text is the same (the server gives the pipeline's report), or None (read it
    each pass). A file whose version, diagnostics (the same objects) and settings did not
    change gets its part of the last pass; a scanned file with no diagnostic and no
    comment costs two lookups."""
    groups: dict[str, list[Diagnostic]] = {}
    for d in diagnostics:
        group = groups.get(d.file)
        if group is None:
            groups[d.file] = [d]
        else:
            group.append(d)
    kept: list[Diagnostic] = []
    warnings: list[Diagnostic] = []
    for path, group in groups.items():
        part = _file_part(memo, path, path in scanned, scanned.get(path), tuple(group),
                          settings_for, text_of)
        kept.extend(part.kept)
        warnings.extend(part.warnings)
    parts = memo._parts
    count = len(groups)
    for path, version in scanned.items():
        if path in groups:
            continue
        count += 1
        last = parts.get(path)
        if last is not None and version is not None and last.version is version \
                and not last.comments and not last.diagnostics:
            continue  # the usual case: no comment, no diagnostic, the same text
        warnings.extend(_file_part(memo, path, True, version, (), settings_for,
                                   text_of).warnings)
    if len(parts) > count:  # files gone since the last pass
        current = {*groups, *scanned}
        memo._parts = {p: part for p, part in parts.items() if p in current}
        memo.keep(current)
    return _without_hidden_parents(diagnostics, kept) + warnings


def _file_part(memo: LintMemo, path: str, scanned: bool, version: object,
               diagnostics: tuple[Diagnostic, ...],
               settings_for: Callable[[str], LintSettings],
               text_of: Callable[[str], str | None]) -> _Part:
    """The part of ``path``: the last pass's if made from the same things, else made."""
    part = memo._parts.get(path)
    if part is not None and version is not None and part.version is version:
        comments = part.comments
    elif reads_comments(path):
        text = text_of(path)
        comments = memo.comments(path, text) if text else _NONE
    else:
        comments = _NONE
    settings = settings_for(path) if diagnostics or comments else None
    if part is not None and part.same(scanned, comments, diagnostics, settings):
        part.version = version
        return part
    kept: list[Diagnostic] = []
    warnings: list[Diagnostic] = []
    if settings is not None:
        on = [d for d in diagnostics if settings.enabled(d.code, d.file)]
        used = _Used(comments) if comments else _NO_COMMENTS
        kept = [d for d in on if not used.suppress(d)]
        if comments and (scanned or on):  # apply_lint reads a file only for these
            warnings = list(_unused(path, used, settings))
    part = memo._parts[path] = _Part(version, scanned, comments, diagnostics, settings,
                                     kept, warnings)
    return part


def _without_hidden_parents(diagnostics: Sequence[Diagnostic], kept: list[Diagnostic],
                            ) -> list[Diagnostic]:
    """``kept`` without a child's BL023 whose parent errors (its related places) are all
    hidden: the parent has no error left to point at."""
    if not any(d.code == codes.EXTENDS_PARENT_BROKEN for d in kept):
        return kept  # the usual case: no set of places to build (a hash of each range)
    shown = {(d.file, d.range) for d in kept}
    hidden = {(d.file, d.range) for d in diagnostics} - shown
    return [d for d in kept if d.code != codes.EXTENDS_PARENT_BROKEN or not d.related
            or not all((r.location.file, r.location.range) in hidden for r in d.related)]


def _unused(path: str, used: _Used, settings: LintSettings) -> Iterator[Diagnostic]:
    if not settings.enabled(codes.UNUSED_SUPPRESSION, path):
        return
    for comment, done in zip(used.comments, used.used, strict=True):
        if comment.codes is None:
            if not done:
                yield _warning(path, comment, "unused suppression: no diagnostic on this line")
            continue
        idle = [c for c in comment.codes if c not in done]
        parts = []
        if idle:
            parts.append(f"no {', '.join(idle)} diagnostic on this line")
        if comment.unknown:
            parts.append(f"unknown code{'s' if len(comment.unknown) > 1 else ''}"
                         f" {', '.join(comment.unknown)}")
        if not comment.codes and not comment.unknown:
            parts.append("no code named")
        if parts:
            yield _warning(path, comment, "unused suppression: " + "; ".join(parts))


def _warning(path: str, comment: Suppression, message: str) -> Diagnostic:
    return Diagnostic(path, comment.range, Severity.WARNING, codes.UNUSED_SUPPRESSION, message)

