"""How every output shows a string it did not write: one rule per format.

A step id, a model name, a path or a message comes from a file of the change under review,
so it may hold anything: a newline, an ANSI escape, ``::error ...::`` (a GitHub workflow
command), a character XML 1.0 forbids, a backtick or ``<!--``. Each output passes such a
string through the rule of its format, and only then puts it next to its own text:

- ``text``: ``visible``, then no ``##[`` and no leading ``::`` (the GitHub runner reads
  every line of a job's log as a possible workflow command);
- ``github_data`` and ``github_property``: GitHub's workflow-command escaping;
- ``xml_text``: XML 1.0's characters (ElementTree escapes ``&``, ``<``, ``>`` and quotes);
- ``markdown``: a GitHub-flavoured Markdown table cell;
- ``json_text``: a JSON document whose strings hold file names that are not UTF-8.

A file name that is not valid UTF-8 reaches Python with its bad bytes as lone surrogates
(``surrogateescape``); every rule shows such a byte as ``\\xNN``.
"""

from __future__ import annotations

import re

_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _shown(ch: str) -> str:
    """A character ``visible`` escapes, as Python's ``repr`` writes it; a lone surrogate in
    ``\\udc80``-``\\udcff`` (a byte of a non-UTF-8 file name) as that byte, ``\\xNN``."""
    named = _NAMED.get(ch)
    if named is not None:
        return named
    code = ord(ch)
    if 0xDC80 <= code <= 0xDCFF:
        return f"\\x{code - 0xDC00:02x}"
    if code <= 0xFF:
        return f"\\x{code:02x}"
    if code <= 0xFFFF:
        return f"\\u{code:04x}"
    return f"\\U{code:08x}"


def visible(text: str, keep: str = "") -> str:
    """``text`` with every character that is not printable (``str.isprintable``, as the
    diagnostics' ``repr`` quoting decides) written as its escape: ``\\n``, ``\\x1b``,
    ``\\u2028``; a newline never starts a new line. The characters of ``keep`` stay (a tab
    in a quoted source line)."""
    if text.isprintable():  # (no control, format, surrogate or unassigned character)
        return text
    return "".join(ch if ch.isprintable() or ch in keep else _shown(ch) for ch in text)


_LEGACY_COMMAND = "##["
_LEADING_COMMAND = re.compile(r"^([ \t]*):(?=:)")


def text(value: str, keep: str = "") -> str:
    """A string for a line of text output: ``visible``, then ``##[`` (the runner's legacy
    command prefix, read anywhere in a line) and a leading ``::`` (a workflow command,
    after blanks) made inert by writing one of their characters as its escape."""
    shown = visible(value, keep)
    if _LEGACY_COMMAND in shown:
        shown = shown.replace(_LEGACY_COMMAND, "#\\x23[")
    if "::" in shown:
        shown = _LEADING_COMMAND.sub(r"\1\\x3a", shown, count=1)
    return shown


# ---------------------------------------------------------------------------- GitHub
def github_data(value: str) -> str:
    """The message of a workflow command, escaped as ``@actions/core``'s ``escapeData``
    (``%``, ``\\r``, ``\\n``), after ``visible`` keeping the newlines (the runner turns
    ``%0A`` back into one, inside the annotation)."""
    shown = visible(value, "\r\n")
    return shown.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def github_property(value: str) -> str:
    """A property value, escaped as ``@actions/core``'s ``escapeProperty``: ``github_data``
    and ``:``, ``,``."""
    return github_data(value).replace(":", "%3A").replace(",", "%2C")


# ---------------------------------------------------------------------------- XML
#: What XML 1.0 does not allow (its ``Char`` production) and ``visible`` let through,
#: written as the forbidden ranges: the negated class of the allowed ones took 4.6 ms to
#: compile, in every process that imports this module.
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")


def xml_text(value: str, keep: str = "") -> str:
    """A string for an XML 1.0 attribute or text: ``visible`` (keeping ``keep``), and any
    character XML 1.0 forbids written as its escape (ElementTree escapes the markup)."""
    shown = visible(value, keep)
    return _NOT_XML.sub(lambda m: _shown(m.group()), shown)


# ---------------------------------------------------------------------------- Markdown
#: The ASCII punctuation a backslash escapes in CommonMark, plus what starts HTML.
_MD_SPECIAL = re.compile(r"[\\`*_{}\[\]()#+\-.!|<>&~$]")
_MD_HTML = {"<": "&lt;", ">": "&gt;", "&": "&amp;"}


def markdown(value: str) -> str:
    """A string for a cell of a GitHub-flavoured Markdown table (or a line): on one line
    (``visible``), every ASCII punctuation character backslash-escaped (``|`` cannot end
    the cell, `````, ``*``, ``_``, ``[`` start nothing), ``<``, ``>``, ``&`` as entities (no
    HTML, no ``<!--``)."""
    shown = _MD_SPECIAL.sub(lambda m: _MD_HTML.get(m.group(), "\\" + m.group()), visible(value))
    # a table cell's blanks at either end are not part of it: its own ones as entities
    stripped = shown.strip(" ")
    if stripped != shown:
        lead = len(shown) - len(shown.lstrip(" "))
        trail = len(shown) - len(shown.rstrip(" ")) if stripped else 0
        shown = "&#32;" * lead + stripped + "&#32;" * trail
    return shown


def markdown_code(value: str) -> str:
    """A string shown as inline code in a table cell: a code span fenced by more backticks
    than any run inside it, ``|`` as ``\\|`` (GitHub's rule for a pipe in a cell, code spans
    included); a string that is empty, holds a backslash, a ``<`` or a character ``visible``
    escapes is ``markdown`` text instead (inside a code span a backslash escapes nothing, so
    ``\\|`` could not be told from an escaped pipe; and no ``<!--`` is written at all)."""
    if not value or "\\" in value or "<" in value or visible(value) != value:
        return markdown(value)
    longest = max((len(run) for run in re.findall("`+", value)), default=0)
    fence = "`" * (longest + 1)
    # CommonMark drops one space at each end of a code span that has one at both and is not
    # all spaces: a pad keeps a value's own spaces, and a backtick off the fence
    pad = " " if "`" in (value[0], value[-1]) or (
        value[0] == value[-1] == " " and value.strip(" ")) else ""
    return f"{fence}{pad}{value.replace('|', chr(92) + '|')}{pad}{fence}"


# ---------------------------------------------------------------------------- JSON
_SURROGATE = re.compile("[\ud800-\udfff]")


def json_text(document: str) -> str:
    """A JSON document (``json.dumps`` with ``ensure_ascii=False``) with each lone surrogate,
    which UTF-8 cannot encode, written as ``\\\\xNN`` (the byte of a non-UTF-8 file name)
    or ``\\\\uNNNN``: inside a JSON string, a backslash and the visible escape."""
    if document.isascii() or not _SURROGATE.search(document):
        return document
    return _SURROGATE.sub(lambda m: "\\" + _shown(m.group()), document)
