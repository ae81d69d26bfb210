"""The budgetlens Action's pull-request comment (Python standard library only).

``comment.py shas``: prints the pull request's base and head commit SHAs, from the event
payload at ``$GITHUB_EVENT_PATH``.

``comment.py post BODY_FILE``: creates, or updates, the ONE comment of the pull request that
starts with :data:`MARKER`, through the REST API at ``$GITHUB_API_URL`` (issue comments of
``$GITHUB_REPOSITORY``), authenticated with ``$GITHUB_TOKEN``. A second run edits the same
comment instead of adding another.

A token without write access (a pull request from a fork gets a read-only ``GITHUB_TOKEN``)
is a warning annotation and exit status 0: the job summary still holds the diff. Any other
failure is an error annotation and exit status 1.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import urllib.error
import urllib.request
from typing import Any
from urllib.parse import quote

#: The hidden first line that finds the comment again.
MARKER = "<!-- budgetlens-diff -->"
PER_PAGE = 100
TIMEOUT = 60  # seconds: one request to the API (a hang guard)


class ApiError(Exception):
    def __init__(self, status: int, method: str, url: str, detail: str) -> None:
        super().__init__(f"{method} {url}: HTTP {status} {detail}".rstrip())
        self.status = status


class Problem(Exception):
    """A missing or malformed setting: the message says which."""


def _env(name: str) -> str:
    value = os.environ.get(name, "")
    if not value:
        raise Problem(f"${name} is not set")
    return value


def _event() -> dict[str, Any]:
    path = _env("GITHUB_EVENT_PATH")
    try:
        with open(path, encoding="utf-8") as f:
            event = json.load(f)
    except (OSError, ValueError) as exc:
        raise Problem(f"cannot read the event payload {path}: {exc}") from None
    if not isinstance(event, dict) or not isinstance(event.get("pull_request"), dict):
        raise Problem("the event payload has no pull_request (not a pull_request event?)")
    return event


def shas(event: dict[str, Any]) -> tuple[str, str]:
    pr = event["pull_request"]
    try:
        base, head = str(pr["base"]["sha"]), str(pr["head"]["sha"])
    except (KeyError, TypeError):
        raise Problem("the pull_request payload has no base.sha or head.sha") from None
    for sha in (base, head):
        if not (len(sha) in (40, 64) and all(c in "0123456789abcdef" for c in sha)):
            raise Problem(f"not a commit SHA in the pull_request payload: {sha!r}")
    return base, head


class Api:
    def __init__(self, base_url: str, token: str) -> None:
        self.base_url = base_url.rstrip("/")
        self.token = token

    def call(self, method: str, path: str, body: Any = None) -> Any:
        url = self.base_url + path
        data = None if body is None else json.dumps(body).encode("utf-8")
        request = urllib.request.Request(url, data=data, method=method, headers={
            "Authorization": f"Bearer {self.token}",
            "Accept": "application/vnd.github+json",
            "X-GitHub-Api-Version": "2022-11-28",
            "User-Agent": "budgetlens-action",
            **({"Content-Type": "application/json"} if data is not None else {})})
        try:
            with urllib.request.urlopen(request, timeout=TIMEOUT) as response:
                return json.loads(response.read() or b"null")
        except urllib.error.HTTPError as exc:
            detail = exc.read(2000).decode("utf-8", "replace")
            with contextlib.suppress(ValueError, AttributeError):
                detail = str(json.loads(detail).get("message", detail))
            raise ApiError(exc.code, method, url, detail) from None

    def comments(self, repo: str, number: int) -> list[dict[str, Any]]:
        found: list[dict[str, Any]] = []
        page = 1
        while True:
            got = self.call("GET", f"/repos/{repo}/issues/{number}/comments"
                                   f"?per_page={PER_PAGE}&page={page}")
            if not isinstance(got, list):
                raise Problem("the comments API did not return a list")
            found.extend(c for c in got if isinstance(c, dict))
            if len(got) < PER_PAGE:
                return found
            page += 1


def post(body_file: str) -> str:
    """Create or update the comment; returns what was done, for the log."""
    api = Api(os.environ.get("GITHUB_API_URL") or "https://api.github.com",
              _env("GITHUB_TOKEN"))
    repo = _env("GITHUB_REPOSITORY")
    if repo.count("/") != 1:
        raise Problem(f"$GITHUB_REPOSITORY is not owner/name: {repo!r}")
    repo = "/".join(quote(part, safe="") for part in repo.split("/"))
    number = _event()["pull_request"].get("number")
    if not isinstance(number, int):
        raise Problem("the pull_request payload has no number")
    try:
        with open(body_file, encoding="utf-8") as f:
            text = f.read()
    except OSError as exc:
        raise Problem(f"cannot read the comment body: {exc}") from None
    body = f"{MARKER}\n{text}"
    mine = [c for c in api.comments(repo, number)
            if str(c.get("body", "")).startswith(MARKER) and isinstance(c.get("id"), int)]
    if mine:
        comment_id = mine[0]["id"]
        api.call("PATCH", f"/repos/{repo}/issues/comments/{comment_id}", {"body": body})
        return f"updated comment {comment_id} on pull request #{number}"
    made = api.call("POST", f"/repos/{repo}/issues/{number}/comments", {"body": body})
    return f"created comment {made.get('id') if isinstance(made, dict) else '?'}" \
           f" on pull request #{number}"


def _annotation(kind: str, message: str) -> None:
    # workflow-command data: %, CR and LF are escaped so the message stays one command
    text = message.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")
    print(f"::{kind} title=budgetlens comment::{text}")


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    try:
        if args == ["shas"]:
            print(*shas(_event()))
            return 0
        if len(args) == 2 and args[0] == "post":
            print(f"budgetlens: {post(args[1])}")
            return 0
        print("usage: comment.py shas | comment.py post BODY_FILE", file=sys.stderr)
        return 2
    except ApiError as exc:
        if exc.status == 403 and args[0] == "post":
            _annotation("warning", f"cannot comment on the pull request ({exc}); a pull"
                        " request from a fork gets a read-only token. The job summary holds"
                        " the budget diff.")
            return 0
        _annotation("error", str(exc))
        return 1
    except (Problem, OSError) as exc:
        _annotation("error", str(exc))
        return 1


if __name__ == "__main__":
    sys.exit(main())
