"""Check a commit message: a short subject, then a blank line before the body.

Usage: python scripts/check_commit_msg.py MESSAGE_FILE
Run by pre-commit at the commit-msg stage (.pre-commit-config.yaml; CONTRIBUTING.md).

The rules, on the message as git will store it:

- the subject (first line) has at most 72 characters;
- the subject does not end with a period;
- the second line, when there is one, is blank.

Git gives the hook the message before its clean-up, so the script cleans up as git does:
comment lines (``#``) and everything below the scissors line are dropped, trailing spaces
are ignored, and blank lines before the subject are skipped. An empty message passes (git
itself refuses it). Exit code 1 and one line per broken rule when the message fails.
"""

from __future__ import annotations

import sys
from pathlib import Path

MAX_SUBJECT = 72
SCISSORS = "# ------------------------ >8 ------------------------"


def message_lines(text: str) -> list[str]:
    """The lines of ``text`` as git stores the message (see the module docstring)."""
    lines: list[str] = []
    for line in text.splitlines():
        if line == SCISSORS:
            break
        if line.startswith("#"):
            continue
        if line.strip() or lines:
            lines.append(line.rstrip())
    return lines


def problems(text: str) -> list[str]:
    """What is wrong with the commit message ``text``; empty when it is fine."""
    lines = message_lines(text)
    if not lines:
        return []
    subject = lines[0]
    found = []
    if len(subject) > MAX_SUBJECT:
        found.append(f"the subject has {len(subject)} characters (at most {MAX_SUBJECT}):"
                     " put the details in the body")
    if subject.endswith("."):
        found.append("the subject ends with a period")
    if len(lines) > 1 and lines[1]:
        found.append("the second line is not blank: leave one blank line after the subject")
    return found


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: check_commit_msg.py MESSAGE_FILE", file=sys.stderr)
        return 2
    text = Path(argv[0]).read_text(encoding="utf-8", errors="replace")
    found = problems(text)
    for problem in found:
        print(f"commit message: {problem}", file=sys.stderr)
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
