"""A planted cache file cannot change a verdict or write outside its folder (issue 30, cases
1-3). The attacker knows everything but the victim's per-user secret: the installed package
(its formats and functions, which it runs in its own cache folder with its own secret), any
cache file's header (the run key), and the workspace's files. Each forgery is planted for a
victim that runs ``budgetlens check`` in a fresh process; its verdict must be the one of a
run with no cache at all, and nothing outside the cache folders may change."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from tests.core.contract.helpers import make_workspace

#: A prompt of 1,500 tokens in cl100k_base (" zqxv" is 3 tokens: counted by tiktoken, by hand
#: in ``test_the_prompt_is_over_budget_as_tiktoken_counts_it``); the step's budget leaves
#: room for about 1,270: an error, which any forgery below turns into "fits".
WORD = " zqxv"
PROMPT = WORD * 500
PIPELINE = ("settings:\n  max_context_tokens: 500\n"
            "steps:\n  - {id: s, type: call_model, prompt_key: sys, max_output_tokens: 100}\n")
CONFIG = {"model_context_window": 2000, "model_max_tokens": 100, "development": True}
#: The hang guard of a victim's run (never a timing: a run that returns is all that counts).
HANG_GUARD = 600
VARIABLES = ("PIPELINE_LIMITS_POLICY", "APP_DEVELOPMENT", "BUDGETLENS_CACHE_DIR",
             "BUDGETLENS_NO_CACHE", "BUDGETLENS_RANK_CACHE", "XDG_CACHE_HOME")


@pytest.fixture
def site(tmp_path: Path) -> Path:
    """``work/ws``: the change under check; ``outside/``: a file nobody may touch."""
    make_workspace(tmp_path / "work" / "ws", config=CONFIG, prompts={"sys.txt": PROMPT},
                   pipelines={"p.yaml": PIPELINE})
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "precious.txt").write_text("precious\n", "utf-8")
    return tmp_path


def _env(xdg: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in VARIABLES}
    env.update(XDG_CACHE_HOME=str(xdg), PYTHONIOENCODING="utf-8", **extra)
    return env


def _check(site: Path, xdg: Path, *args: str, **extra: str) -> tuple[int, str, str]:
    """``budgetlens check ws`` in a fresh process in ``work``, with ``xdg`` as the user's
    cache folder."""
    proc = subprocess.run([sys.executable, "-m", "budgetlens_cli", "check", "ws", *args],
                          cwd=site / "work", env=_env(xdg, **extra), capture_output=True,
                          text=True, timeout=HANG_GUARD)
    return proc.returncode, proc.stdout, proc.stderr


def _reference(site: Path) -> tuple[int, str, str]:
    """The verdict with no cache of any kind (its own, empty, user folder)."""
    return _check(site, site / "nocache_xdg", "--no-cache", BUDGETLENS_NO_CACHE="1",
                  BUDGETLENS_RANK_CACHE="0")


def _attacker(site: Path, code: str, *args: str) -> str:
    """``code`` run by the attacker in ``work``, with its own user cache folder."""
    proc = subprocess.run([sys.executable, "-c", code, *args], cwd=site / "work",
                          env=_env(site / "attacker_xdg"), capture_output=True, text=True,
                          timeout=HANG_GUARD)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def snapshot(root: Path, skip: tuple[Path, ...]) -> dict[str, tuple[object, ...]]:
    """Every name under ``root`` but the ``skip`` folders: kind, mode, size, bytes' hash,
    link target."""
    out: dict[str, tuple[object, ...]] = {}
    for folder, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if Path(folder, d) not in skip]
        for name in dirs + files:
            path = Path(folder, name)
            st = path.lstat()
            if stat.S_ISLNK(st.st_mode):
                out[str(path)] = ("link", os.readlink(path))
            elif stat.S_ISREG(st.st_mode):
                out[str(path)] = ("file", st.st_mode, st.st_mtime_ns,
                                  hashlib.sha256(path.read_bytes()).hexdigest())
            else:
                out[str(path)] = ("other", st.st_mode)
    return out


def _outside_caches(site: Path) -> dict[str, tuple[object, ...]]:
    return snapshot(site, (site / "work" / ".budgetlens_cache", site / "victim_xdg",
                           site / "attacker_xdg", site / "nocache_xdg"))


def _plain_tiktoken_count(text: str) -> int:
    """``text``'s tokens by tiktoken over the shipped cl100k_base ranks (not budgetlens)."""
    import base64

    import tiktoken

    from budgetlens.tokens import core
    folder = Path(core.__file__).resolve().parent / "encodings"
    meta = json.loads((folder / "encodings.json").read_text("utf-8"))["encodings"]
    ranks = {base64.b64decode(token): int(rank) for token, rank in (
        line.split() for line in (folder / "cl100k_base.tiktoken").read_text("ascii")
        .splitlines() if line)}
    enc = tiktoken.Encoding(name="plain", pat_str=meta["cl100k_base"]["pat_str"],
                            mergeable_ranks=ranks,
                            special_tokens=meta["cl100k_base"]["special_tokens"])
    return len(enc.encode_ordinary(text))


def test_the_prompt_is_over_budget_as_tiktoken_counts_it(site: Path) -> None:
    assert _plain_tiktoken_count(WORD) == 3 and _plain_tiktoken_count(PROMPT) == 1500
    code, out, err = _reference(site)
    assert code == 1 and err == "" and "error" in out


def _assert_victim(site: Path, got: tuple[int, str, str],
                   before: dict[str, tuple[object, ...]]) -> None:
    reference = _reference(site)
    assert reference[0] == 1
    assert got[:2] == reference[:2], got[2]  # the same verdict, the same bytes
    assert "budgetlens: note: ignored the cache file " in got[2], got[2]
    assert _outside_caches(site) == before


# ---------------------------------------------------------------- the result cache (case 2)
FORGE_ENTRIES = """
from pathlib import Path
from budgetlens_cli import cache as rc
from budgetlens_cli import cache_store
(file,) = Path(".budgetlens_cache").glob("*/*.cache")
data = file.read_bytes()
key = data[len(rc.MAGIC):].split(b"\\n", 1)[0].decode()
entries = rc._decode(data, key)
assert entries
for entry in entries.values():
    for path, (at, content) in list(entry.deps.items()):
        where = content.partition("@")[2]
        fp = cache_store._read_fingerprint(path) + ("@" + where if where else "")
        entry.deps[path] = ("disk:0:0:0:0:0", fp)  # no stat: compared by content
file.write_bytes(rc._encode(entries, key))
for answer in Path(".budgetlens_cache").glob("*/*.answer"):
    answer.unlink()
"""


def test_a_planted_result_cache_entry_gives_no_false_all_clear(site: Path) -> None:
    prompt = site / "work" / "ws" / "prompts" / "sys.txt"
    prompt.write_text("short", "utf-8")  # the attacker's own run says "fits"
    assert _check(site, site / "attacker_xdg")[0] == 0
    prompt.write_text(PROMPT, "utf-8")  # the change's real prompt
    _attacker(site, FORGE_ENTRIES)  # entries keyed by the real files' hashes
    before = _outside_caches(site)
    _assert_victim(site, _check(site, site / "victim_xdg"), before)
    assert _check(site, site / "victim_xdg") == _reference(site)  # rewritten: no note


FORGE_ANSWER = """
import os
import budgetlens
from budgetlens_cli import cache as rc

class Out:  # the victim's standard output: a pipe, UTF-8 (PYTHONIOENCODING)
    encoding, errors = "utf-8", "strict"

key = rc.answer_key(["check", "ws"], os.environ, Out())
checks = {}
rc._listing_checks(["ws"], checks)  # folder listings: names only, known to the attacker
cache_file = budgetlens.__file__  # a file of the image: its stat is the same everywhere
data = rc._encode_answer(key, 0, 1, cache_file, rc.disk_fingerprint(cache_file), checks,
                         "ws/pipelines/p.yaml: all steps fit (0 errors)\\n")
folder = os.path.join(".budgetlens_cache", rc._safe_version())
os.makedirs(folder, exist_ok=True)
with open(os.path.join(folder, key[:40] + rc.ANSWER_SUFFIX), "wb") as fh:
    fh.write(data)
"""


def test_a_planted_answer_is_not_replayed(site: Path) -> None:
    _attacker(site, FORGE_ANSWER)
    before = _outside_caches(site)
    got = _check(site, site / "victim_xdg")
    assert "all steps fit" not in got[1]
    _assert_victim(site, got, before)


# ---------------------------------------------------------- BUILD on an allowed class (case 1)
PLANT_BUILD = """
import hashlib, struct, sys
from pathlib import Path
from budgetlens_cli import cache as rc
(file,) = Path(".budgetlens_cache").glob("*/*.cache")
key = file.read_bytes()[len(rc.MAGIC):].split(b"\\n", 1)[0]  # the run key, in clear
target = sys.argv[1].encode()
def text(b):
    return b"X" + struct.pack("<I", len(b)) + b
# ResultCache, BUILD with the slot state {"path": target}: a class attribute; then {}
payload = (b"\\x80\\x02cbudgetlens_cli.cache_store\\nResultCache\\nN}" + text(b"path")
           + text(target) + b"s\\x86b0}.")
checksum = hashlib.blake2b(payload, digest_size=16).hexdigest().encode()
file.write_bytes(rc.MAGIC + key + b"\\n" + checksum + b"\\n" + payload)
for answer in Path(".budgetlens_cache").glob("*/*.answer"):
    answer.unlink()
"""


def test_a_planted_build_payload_writes_nothing_outside_the_cache_folder(site: Path) -> None:
    assert _check(site, site / "attacker_xdg")[0] == 1  # a cache file of this run key
    target = site / "outside" / "precious.txt"
    _attacker(site, PLANT_BUILD, str(target))
    before = _outside_caches(site)
    got = _check(site, site / "victim_xdg")
    assert target.read_text("utf-8") == "precious\n"
    _assert_victim(site, got, before)


# ------------------------------------------------------ the per-user caches (case 3)
FORGE_COUNTS = """
import os, sys
from budgetlens.tokens import core, counts
tok = core.get_tokenizer("cl100k_base")
store = tok._counts
store.load()
store.put(counts.text_digest(open("ws/prompts/sys.txt", encoding="utf-8").read()), 1)
assert counts.flush() == 1
print(os.path.relpath(store.file(), os.environ["XDG_CACHE_HOME"]))
"""

FORGE_RANKS = """
import os
from itertools import combinations
from budgetlens.tokens import core
meta = core._encodings_meta()["cl100k_base"]
data = (core._DATA / meta["file"]).read_bytes()
ranks = core._parse_ranks(data)
import sys
word = sys.argv[1].encode()
# every piece of the word a token (keeping the table's size and its ranks unique): the
# word is one token, not three
pieces = {word[i:j] for i, j in combinations(range(len(word) + 1), 2) if j - i > 1}
spare = [t for t in sorted(ranks, key=ranks.get, reverse=True) if len(t) > 8]
for piece, old in zip(sorted(pieces - ranks.keys()), spare):
    ranks[piece] = ranks.pop(old)
file = core._rank_cache_file("cl100k_base", meta["sha256"])
core._store_ranks(file, ranks)
assert file.is_file()
print(os.path.relpath(file, os.environ["XDG_CACHE_HOME"]))
"""


@pytest.mark.parametrize("cache", ["counts", "ranks"])
@pytest.mark.parametrize("with_secret", [False, True], ids=["file", "file and secret"])
def test_a_planted_per_user_cache_file_changes_no_count(
        site: Path, cache: str, with_secret: bool) -> None:
    """Copied into the victim's cache folder: the attacker's count file (the prompt counted
    as 1 token) or rank file (the prompt's word one token), each whole and sealed with the
    attacker's key; with the attacker's secret file too (mode 0600), as a restore would
    bring it."""
    relative = _attacker(site, FORGE_COUNTS if cache == "counts" else FORGE_RANKS,
                         WORD).strip()
    planted = site / "victim_xdg" / relative
    planted.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy2(site / "attacker_xdg" / relative, planted)
    if with_secret and (site / "attacker_xdg" / "budgetlens" / "secret").exists():
        shutil.copy2(site / "attacker_xdg" / "budgetlens" / "secret",
                     site / "victim_xdg" / "budgetlens" / "secret")
    before = _outside_caches(site)
    _assert_victim(site, _check(site, site / "victim_xdg"), before)


def _per_user_file(site: Path, which: str) -> Path:
    """Where the victim's secret, count file or rank file of cl100k_base is."""
    code = ("import os\nfrom budgetlens.tokens import core\n"
            "meta = core._encodings_meta()['cl100k_base']\n"
            "print(core._rank_cache_file('cl100k_base', meta['sha256']))\n"
            "print(core.get_tokenizer('cl100k_base')._counts.file())\n")
    proc = subprocess.run([sys.executable, "-c", code], env=_env(site / "victim_xdg"),
                          capture_output=True, text=True, timeout=HANG_GUARD)
    ranks, counts = proc.stdout.split()
    return {"secret": site / "victim_xdg" / "budgetlens" / "secret", "ranks": Path(ranks),
            "counts": Path(counts)}[which]


@pytest.mark.parametrize("where", ["secret", "counts", "ranks"])
@pytest.mark.parametrize("planted", ["FIFO", "link to /dev/zero"])
def test_a_fifo_or_a_link_to_dev_zero_in_the_user_cache_neither_hangs_nor_reads(
        site: Path, where: str, planted: str) -> None:
    path = _per_user_file(site, where)
    path.parent.mkdir(parents=True, exist_ok=True)
    if planted == "FIFO":
        os.mkfifo(path)
    else:
        os.symlink("/dev/zero", path)
    before = _outside_caches(site)
    code, out, err = _check(site, site / "victim_xdg")  # returns: the hang guard is unused
    assert (code, out) == _reference(site)[:2]
    assert err.startswith("budgetlens: note: "), err
    assert len(err.splitlines()) == 1
    assert _outside_caches(site) == before
    assert os.path.exists("/dev/zero")


def test_a_secret_that_is_not_private_turns_the_caches_off(site: Path) -> None:
    assert _check(site, site / "victim_xdg")[0] == 1  # made it
    secret = site / "victim_xdg" / "budgetlens" / "secret"
    assert stat.S_IMODE(secret.stat().st_mode) == 0o600 and secret.stat().st_size == 32
    secret.chmod(0o644)
    shutil.rmtree(site / "work" / ".budgetlens_cache")
    code, out, err = _check(site, site / "victim_xdg")
    assert (code, out) == _reference(site)[:2]
    assert err == (f"budgetlens: note: the cache key {secret} is not used (its mode is 644,"
                   " not 600): the caches are off; delete it to make a new one\n")
    assert not (site / "work" / ".budgetlens_cache").exists()  # off: nothing written


@pytest.mark.parametrize("planted", ["FIFO", "link to /dev/zero", "link to a file outside"])
def test_a_result_cache_file_planted_as_a_fifo_or_link_is_neither_read_nor_written_through(
        site: Path, planted: str) -> None:
    assert _check(site, site / "attacker_xdg")[0] == 1  # the run key's file name
    (file,) = (site / "work" / ".budgetlens_cache").glob("*/*.cache")
    for answer in (site / "work" / ".budgetlens_cache").glob("*/*.answer"):
        answer.unlink()
    file.unlink()
    if planted == "FIFO":
        os.mkfifo(file)
    elif planted == "link to /dev/zero":
        os.symlink("/dev/zero", file)
    else:
        os.symlink(site / "outside" / "precious.txt", file)
    before = _outside_caches(site)
    got = _check(site, site / "victim_xdg")  # returns: the hang guard is unused
    _assert_victim(site, got, before)
    assert (site / "outside" / "precious.txt").read_text("utf-8") == "precious\n"
    assert stat.S_ISREG(file.lstat().st_mode)  # the name now holds the victim's own file
