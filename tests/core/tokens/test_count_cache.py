"""The persistent count cache (``tokens.counts``): its counts are plain tiktoken's; a warm
process counting texts it has seen never builds an encoding nor reads a rank file; damaged,
truncated or foreign files are ignored; it stays bounded; concurrent writers leave a valid
file; ``BUDGETLENS_NO_CACHE=1`` reads and writes nothing."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from pathlib import Path

import pytest
import tiktoken

from budgetlens.tokens import core, counts

ENCODINGS = Path(core.__file__).resolve().parent / "encodings"
META = json.loads((ENCODINGS / "encodings.json").read_text("utf-8"))["encodings"]
TEXTS = ["hello world", "Bonjour, le monde ! ", "日本語のテキスト", "emoji 👩‍👩‍👧 and é",
         "<|endoftext|> is text here", "  \n\n\t  spaces\r\n", "def f(x):\n    return x * 2\n"]


def _plain(name: str) -> tiktoken.Encoding:
    """Plain tiktoken over the shipped ranks, built here (not by budgetlens)."""
    import base64
    ranks = {}
    for line in (ENCODINGS / META[name]["file"]).read_text("ascii").split("\n"):
        if line:
            token, rank = line.split(" ")
            ranks[base64.b64decode(token)] = int(rank)
    return tiktoken.Encoding(name=f"plain-{name}", pat_str=META[name]["pat_str"],
                             mergeable_ranks=ranks, special_tokens=META[name]["special_tokens"])


def _random_texts(n: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    alphabet = "abc XYZ 012 \n\t,.;é日本👍\u0301"
    return ["".join(rng.choice(alphabet) for _ in range(rng.randint(1, 60))) for _ in range(n)]


@pytest.fixture
def xdg(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A private cache folder; fresh stores and tokenizers in this process."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    monkeypatch.delenv(counts.NO_CACHE_ENV, raising=False)
    monkeypatch.setattr(counts, "_STORES", {})
    core._load_encoding.cache_clear()
    core._family_tokenizer.cache_clear()
    yield tmp_path / "xdg"
    core._load_encoding.cache_clear()
    core._family_tokenizer.cache_clear()


def _run(code: str, xdg: Path, **extra: str) -> list[str]:
    """``code`` in a fresh interpreter with this cache folder; its printed lines."""
    env = {k: v for k, v in os.environ.items() if k != counts.NO_CACHE_ENV}
    env.update({"XDG_CACHE_HOME": str(xdg), **extra})
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env=env, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.splitlines()


#: In a fresh interpreter: count TEXTS (given as JSON in argv-like form), counting every
#: tiktoken.Encoding constructed and every rank file read; write the counts; print them.
COUNTING = """
import json, sys
from pathlib import Path
import tiktoken
from budgetlens.tokens import core, counts
built, reads = [], []
real_init = tiktoken.Encoding.__init__
def init(self, *a, **k):
    built.append(k.get("name"))
    real_init(self, *a, **k)
tiktoken.Encoding.__init__ = init
real_read = Path.read_bytes
def read_bytes(self):
    if self.suffix == ".tiktoken":
        reads.append(self.name)
    return real_read(self)
Path.read_bytes = read_bytes
texts = json.loads({texts!r})
tok = core.get_tokenizer({name!r})
print(json.dumps([tok.count(t) for t in texts]))
print(json.dumps([built, reads]))
counts.flush()
"""


def test_cached_counts_equal_plain_tiktoken(xdg: Path) -> None:
    texts = TEXTS + _random_texts(200, seed=12)
    for name in ("cl100k_base", "o200k_base"):
        plain = _plain(name)
        expected = [len(plain.encode_ordinary(t)) for t in texts]
        first = _run(COUNTING.format(texts=json.dumps(texts), name=name), xdg)
        second = _run(COUNTING.format(texts=json.dumps(texts), name=name), xdg)
        assert json.loads(first[0]) == expected
        assert json.loads(second[0]) == expected  # from the cache
        assert json.loads(second[1]) == [[], []]


def test_a_warm_process_builds_no_encoding_and_reads_no_rank_file(xdg: Path) -> None:
    code = COUNTING.format(texts=json.dumps(TEXTS), name="cl100k_base")
    cold = _run(code, xdg)
    assert json.loads(cold[1]) == [["cl100k_base"], ["cl100k_base.tiktoken"]]
    warm = _run(code, xdg)
    assert json.loads(warm[1]) == [[], []]
    assert warm[0] == cold[0]
    # a text never counted builds it
    new = _run(COUNTING.format(texts=json.dumps([*TEXTS, "a brand new text"]),
                               name="cl100k_base"), xdg)
    assert json.loads(new[1]) == [["cl100k_base"], ["cl100k_base.tiktoken"]]
    assert json.loads(new[0])[-1] == len(_plain("cl100k_base").encode_ordinary(
        "a brand new text"))


def test_an_approximate_family_counts_from_the_cache_too(xdg: Path) -> None:
    code = COUNTING.format(texts=json.dumps(TEXTS), name="claude_approx")
    cold = _run(code, xdg)
    warm = _run(code, xdg)
    plain = _plain("o200k_base")
    assert json.loads(warm[0]) == json.loads(cold[0]) == \
        [len(plain.encode_ordinary(t)) for t in TEXTS]
    assert json.loads(cold[1])[0] == ["o200k_base"]
    assert json.loads(warm[1]) == [[], []]


def test_encode_still_builds_the_encoding(xdg: Path) -> None:
    tok = core.get_tokenizer("cl100k_base")
    assert isinstance(tok, core.TiktokenTokenizer)
    assert not tok.loaded
    assert tok.encode("hello world") == [15339, 1917]  # tiktoken's published ids
    assert tok.loaded


def _store_file(xdg: Path) -> Path:
    (file,) = (xdg / "budgetlens" / "counts").glob("cl100k_base-*.marshal")
    return file


def _fill(xdg: Path) -> Path:
    _run(COUNTING.format(texts=json.dumps(TEXTS), name="cl100k_base"), xdg)
    return _store_file(xdg)


@pytest.mark.parametrize("damage", ["truncate", "flip", "foreign", "garbage", "empty"])
def test_a_damaged_file_is_ignored(xdg: Path, damage: str) -> None:
    file = _fill(xdg)
    data = file.read_bytes()
    if damage == "truncate":
        file.write_bytes(data[:len(data) // 2])
    elif damage == "flip":
        file.write_bytes(data[:-3] + bytes([data[-3] ^ 0xFF]) + data[-2:])
    elif damage == "foreign":  # another identity's file under this name
        first, rest = data.split(b"\n", 1)
        file.write_bytes(first + b"\n" + b"0" * 64 + rest[64:])
    elif damage == "garbage":
        file.write_bytes(os.urandom(len(data)))
    else:
        file.write_bytes(b"")
    out = _run(COUNTING.format(texts=json.dumps(TEXTS), name="cl100k_base"), xdg)
    plain = _plain("cl100k_base")
    assert json.loads(out[0]) == [len(plain.encode_ordinary(t)) for t in TEXTS]
    assert json.loads(out[1])[0] == ["cl100k_base"]  # counted again
    # and the file was rewritten whole: the next process needs no encoding
    again = _run(COUNTING.format(texts=json.dumps(TEXTS), name="cl100k_base"), xdg)
    assert json.loads(again[1]) == [[], []]


def test_a_wrong_value_in_a_whole_file_is_not_used(xdg: Path) -> None:
    store = counts.CountStore("t", "ab" * 32)
    key = counts.text_digest("x")
    store.put(key, 1)
    store.put(counts.text_digest("y"), 2)
    assert store.flush()
    file = store.file()
    assert file is not None
    # a whole file, sealed with this user's cache key, holding a value that is not a count
    import marshal

    from budgetlens import usercache
    payload = marshal.dumps({key: "one", counts.text_digest("y"): 2})
    header = counts._MAGIC + ("ab" * 32).encode() + b"\n"
    user_key = usercache.user_key()
    assert user_key is not None
    file.write_bytes(usercache.sealed(user_key, b"counts", header, payload))
    fresh = counts.CountStore("t", "ab" * 32)
    assert fresh.get(key) is None
    assert fresh.get(counts.text_digest("y")) == 2


def test_the_cache_stays_bounded_and_keeps_the_most_recent(xdg: Path) -> None:
    store = counts.CountStore("t", "cd" * 32, max_entries=50)
    keys = [counts.text_digest(str(i)) for i in range(120)]
    for i, key in enumerate(keys):
        store.put(key, i)
        if i == 10:
            assert store.get(keys[0]) == 0  # used again: recent
    assert len(store) == 50
    assert store.flush()
    fresh = counts.CountStore("t", "cd" * 32, max_entries=50)
    fresh.load()
    assert len(fresh) == 50
    assert fresh.get(keys[119]) == 119
    assert fresh.get(keys[0]) is None  # used before 110 newer ones
    assert fresh.get(keys[69]) is None
    assert fresh.get(keys[70]) == 70
    file = store.file()
    assert file is not None and file.stat().st_size < 50 * 60 + 200


def test_a_writer_keeps_what_another_process_wrote(xdg: Path) -> None:
    a = counts.CountStore("t", "ef" * 32)
    b = counts.CountStore("t", "ef" * 32)
    a.load()
    b.load()
    a.put(counts.text_digest("a"), 1)
    b.put(counts.text_digest("b"), 2)
    assert a.flush() and b.flush()
    fresh = counts.CountStore("t", "ef" * 32)
    assert fresh.get(counts.text_digest("a")) == 1
    assert fresh.get(counts.text_digest("b")) == 2
    assert not a.flush()  # nothing new: nothing written


CONCURRENT = """
import sys
from budgetlens.tokens import counts
store = counts.CountStore("t", "12" * 32, max_entries=500)
me = int(sys.argv[1])
for round in range(30):
    for i in range(20):
        text = f"{me}-{round}-{i}"
        store.put(counts.text_digest(text), len(text))
    store.flush()
"""


def test_concurrent_writers_leave_a_valid_file(xdg: Path) -> None:
    env = {**os.environ, "XDG_CACHE_HOME": str(xdg)}
    env.pop(counts.NO_CACHE_ENV, None)
    procs = [subprocess.Popen([sys.executable, "-c", CONCURRENT, str(n)], env=env)
             for n in range(4)]
    assert [p.wait(timeout=120) for p in procs] == [0, 0, 0, 0]
    store = counts.CountStore("t", "12" * 32, max_entries=500)
    file = store.file()
    assert file is not None
    assert store._read(file)  # whole and checksummed: not ignored
    store.load()
    assert 20 <= len(store) <= 500
    for key, value in list(store._entries.items()):
        assert store.get(key) == value
    # each kept count is the one its writer wrote: the text's length
    texts = {counts.text_digest(f"{n}-{r}-{i}"): len(f"{n}-{r}-{i}")
             for n in range(4) for r in range(30) for i in range(20)}
    assert all(texts[k] == v for k, v in store._entries.items())
    assert not [p for p in file.parent.iterdir() if p.name.startswith(".tmp-")]


def test_no_cache_reads_and_writes_nothing(xdg: Path) -> None:
    code = COUNTING.format(texts=json.dumps(TEXTS), name="cl100k_base")
    _run(code, xdg, BUDGETLENS_NO_CACHE="1")
    assert not (xdg / "budgetlens" / "counts").exists()
    _run(code, xdg)  # fills it
    out = _run(code, xdg, BUDGETLENS_NO_CACHE="1")
    assert json.loads(out[1])[0] == ["cl100k_base"]  # not read: counted
    # and not written: the file is the one the process before wrote
    before = _store_file(xdg).read_bytes()
    _run(COUNTING.format(texts=json.dumps(["another"]), name="cl100k_base"), xdg,
         BUDGETLENS_NO_CACHE="1")
    assert _store_file(xdg).read_bytes() == before


def test_an_unwritable_cache_folder_only_means_counting(xdg: Path) -> None:
    xdg.mkdir(parents=True)
    (xdg / "budgetlens").write_text("a file where the folder should be")
    tok = core.get_tokenizer("cl100k_base")
    assert tok.count("hello world") == 2
    assert counts.flush() == 0
