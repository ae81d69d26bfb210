"""A git revision as a ``FileSource``, read without a worktree.

``git ls-tree -r -z REV`` lists the revision's files once; a file's text is read when the
check asks for it (``git cat-file blob SHA``). Paths are a folder that does not exist (the
*mount*, next to the repository's files) joined with the path in the tree, so a revision reads
like a checkout, but nothing is read from the disk: a path not in the tree is missing. Works
on a shallow clone as long as the revision itself was fetched (``fetch-depth: 2``,
``git fetch origin BASE``).
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path, PurePosixPath

from budgetlens.files import (
    MAX_FILE_BYTES,
    MISSING_FINGERPRINT,
    FileMissing,
    FileTooLarge,
    NotAFile,
    OutsideRoot,
    decode_text,
    path_key,
    path_problem,
)
from budgetlens_cli.main import UsageError

_SYMLINK = "120000"
_MAX_LINKS = 8


def git(args: list[str], cwd: str, stdin: bytes | None = None
        ) -> subprocess.CompletedProcess[bytes]:
    """Run ``git`` in ``cwd`` (no pager, no prompt); the result, whatever its status."""
    env = dict(os.environ, GIT_TERMINAL_PROMPT="0", GIT_PAGER="cat")
    try:
        return subprocess.run(["git", *args], cwd=cwd, capture_output=True, env=env,
                              input=stdin, check=False)
    except FileNotFoundError:
        raise UsageError("git is not installed (needed to read a revision)") from None


def _first_line(data: bytes) -> str:
    lines = data.decode("utf-8", "replace").strip().splitlines()
    return lines[0] if lines else ""


def resolve_revision(rev: str, cwd: str) -> str:
    """The commit id of ``rev``; UsageError when it names no commit of this repository."""
    if rev.startswith("-"):
        raise UsageError(f"{rev}: not a revision or a folder")
    done = git(["rev-parse", "--verify", "--quiet", "--end-of-options", f"{rev}^{{commit}}"],
               cwd)
    if done.returncode != 0:
        inside = git(["rev-parse", "--show-toplevel"], cwd)
        if inside.returncode != 0:
            raise UsageError(f"{rev}: no such folder, and {os.path.abspath(cwd)} is not in a"
                             " git repository to read a revision from")
        raise UsageError(f"{rev}: unknown revision and no such folder (on a shallow CI"
                         " checkout fetch it first: `git fetch --depth=1 origin <sha>`)")
    return done.stdout.decode().strip()


class GitRevisionFiles:
    """The files of one commit of the repository at ``repo``, keyed by their path under
    ``mount`` (default: the repository's top). A ``mount`` that does not exist on disk keeps
    the check's symlink test (``is_inside`` resolves paths on disk) off the working tree."""

    def __init__(self, commit: str, repo: str, mount: str | None = None, *,
                 max_bytes: int = MAX_FILE_BYTES) -> None:
        self.commit = commit
        self.repo = repo
        self.top = os.path.abspath(mount if mount is not None else repo)
        self.max_bytes = max_bytes
        self._entries: dict[str, tuple[str, str, str, int]] = {}  # key -> mode, type, sha, size
        self._dirs: set[str] = set()
        self._texts: dict[str, str] = {}
        self._blobs: dict[str, bytes] = {}
        self._list()

    def _list(self) -> None:
        done = git(["ls-tree", "-r", "-l", "-z", "--full-tree", self.commit], self.repo)
        if done.returncode != 0:
            raise UsageError(f"{self.commit}: cannot list the files ({_first_line(done.stderr)})")
        for record in done.stdout.split(b"\0"):
            if not record:
                continue
            meta, name = record.split(b"\t", 1)
            mode, kind, sha, size = meta.decode().split()
            rel = name.decode("utf-8", "surrogateescape")
            self._entries[self._key(rel)] = (mode, kind, sha, int(size) if size.isdigit() else 0)
            for parent in PurePosixPath(rel).parents:
                self._dirs.add(self._key(str(parent)))

    def _key(self, rel: str) -> str:
        return path_key(os.path.join(self.top, rel))

    def paths(self) -> list[str]:
        """Every regular file of the revision, relative to the top, ``/`` separated."""
        prefix = path_key(self.top) + os.sep
        return sorted(k[len(prefix):].replace(os.sep, "/") for k, e in self._entries.items()
                      if e[1] == "blob" and e[0] != _SYMLINK and k.startswith(prefix))

    def _entry(self, path: Path) -> tuple[str, tuple[str, str, str, int]]:
        """The key and tree entry of ``path``, symlinks inside the tree followed."""
        key = path_key(path)
        for _ in range(_MAX_LINKS):
            entry = self._entries.get(key)
            if entry is None:
                if key in self._dirs or key == path_key(self.top):
                    raise NotAFile(path, f"{path}: is a directory, expected a file")
                raise FileMissing(path, f"{path}: no such file at {self.commit[:12]}")
            if entry[0] != _SYMLINK:
                return key, entry
            target = self._blob(entry[2]).decode("utf-8", "surrogateescape")
            key = path_key(os.path.normpath(os.path.join(os.path.dirname(key), target)))
            if not (key + os.sep).startswith(path_key(self.top) + os.sep):
                raise OutsideRoot(path, f"{path}: a symlink out of the repository")
        raise NotAFile(path, f"{path}: too many levels of symbolic links")

    def prefetch(self, paths: list[str]) -> None:
        """Read the blobs of ``paths`` (relative to the top) with one ``git cat-file --batch``
        instead of one process per file; a blob that is not there is left to ``_blob``."""
        shas = sorted({e[2] for e in (self._entries.get(self._key(p)) for p in paths)
                       if e is not None and e[1] == "blob" and e[3] <= self.max_bytes})
        if not shas:
            return
        done = git(["cat-file", "--batch"], self.repo, stdin="".join(
            f"{sha}\n" for sha in shas).encode())
        data, at = done.stdout, 0
        while at < len(data):
            end = data.index(b"\n", at)
            head = data[at:end].split()
            if len(head) != 3:  # "<sha> missing"
                at = end + 1
                continue
            size = int(head[2])
            self._blobs[head[0].decode()] = data[end + 1:end + 1 + size]
            at = end + 1 + size + 1

    def _blob(self, sha: str) -> bytes:
        if sha in self._blobs:
            return self._blobs[sha]
        done = git(["cat-file", "blob", sha], self.repo)
        if done.returncode != 0:
            raise FileMissing(sha, f"{sha}: object missing ({_first_line(done.stderr)})")
        return done.stdout

    def read_text(self, path: Path) -> str:
        problem = path_problem(path)
        if problem is not None:
            raise FileMissing(path, f"{str(path)!r}: {problem}")
        key, (_, kind, sha, size) = self._entry(path)
        if kind != "blob":
            raise NotAFile(path, f"{path}: a {kind} (submodule), expected a file")
        if size > self.max_bytes:
            raise FileTooLarge(path, f"{path}: {size} bytes, above the {self.max_bytes}"
                                     " byte cap for a text input")
        if key not in self._texts:
            self._texts[key] = decode_text(self._blob(sha), path)
        return self._texts[key]

    def fingerprint(self, path: Path) -> str:
        entry = self._entries.get(path_key(path))
        return f"git:{entry[2]}" if entry is not None else MISSING_FINGERPRINT


def repository_top(cwd: str) -> str:
    """The top-level folder of the repository holding ``cwd``."""
    done = git(["rev-parse", "--show-toplevel"], cwd)
    if done.returncode != 0:
        raise UsageError(f"{os.path.abspath(cwd)} is not in a git repository")
    return done.stdout.decode().strip()
