"""A prompt file's token count is keyed by a hash of the bytes read (``files.read_text_utf8``,
``TokenCounter.count(text, utf8=...)``): its text is not encoded again to hash it. The bytes
handed on are exactly the text's UTF-8 (a BOM is dropped as ``decode_text`` drops it), so
every key is the one the text itself gives. Mechanisms: the hashes' inputs are recorded."""

from __future__ import annotations

import codecs
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from budgetlens.contract.cache import BudgetCache, RecordingFiles
from budgetlens.contract.check import check_pipeline
from budgetlens.contract.results import CheckOptions
from budgetlens.files import (
    DiskFiles,
    OverlayFiles,
    RunFiles,
    content_hash,
    read_text_utf8,
    utf8_hash,
)
from budgetlens.tokens import core, counts
from budgetlens.tokens.core import TokenCounter
from budgetlens.tokens.counts import text_digest, utf8_digest
from tests.core.contract.helpers import make_workspace, tokens

BOM = codecs.BOM_UTF8
CONTENTS = [b"plain ascii text\n", "caf\u00e9 \u65e5\u672c \U0001f469\u200d\U0001f467\n".encode(),
            BOM + b"after a BOM", BOM + BOM + b"two BOMs: one is text", BOM,
            "\ufeff in the middle \ufeff".encode(), b"\r\n\t", "\U0010fffd".encode()]


@pytest.mark.parametrize("data", CONTENTS)
def test_the_bytes_handed_on_are_the_texts_utf8(tmp_path: Path, data: bytes) -> None:
    path = tmp_path / "p.txt"
    path.write_bytes(data)
    text = DiskFiles().read_text(path)
    for files in (DiskFiles(), RunFiles(DiskFiles()), RecordingFiles(RunFiles(DiskFiles())),
                  OverlayFiles(DiskFiles(), {})):
        got, utf8 = read_text_utf8(files, path)
        assert got == text
        assert utf8 == text.encode("utf-8", "surrogatepass")
        assert utf8_hash(utf8) == content_hash(text)
        assert utf8_digest(utf8) == text_digest(text)


def test_sources_without_the_bytes_give_the_text_alone(tmp_path: Path) -> None:
    path = tmp_path / "p.txt"
    path.write_text("on disk", "utf-8")

    class OwnText(DiskFiles):  # reads text its own way: its bytes are not the text's
        def read_text(self, path: Path) -> str:
            return "own " + super().read_text(path)

    class Plain:  # any FileSource
        def read_text(self, path: Path) -> str:
            return "plain"

        def fingerprint(self, path: Path) -> str:
            return "fp"

    assert read_text_utf8(OverlayFiles(DiskFiles(), {path: "buffer"}), path) == ("buffer", None)
    assert read_text_utf8(RunFiles(OwnText()), path) == ("own on disk", None)
    assert read_text_utf8(Plain(), path) == ("plain", None)


@pytest.fixture
def digested(monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, list[object]]]:
    """The inputs of ``tokens.core``'s hashes: texts encoded to hash them, bytes hashed."""
    seen: dict[str, list[object]] = {"text_digest": [], "utf8_digest": [],
                                     "content_hash": [], "utf8_hash": []}

    def recording(name: str, fn: Callable[[object], object]) -> Callable[[object], object]:
        def wrapper(arg: object) -> object:
            seen[name].append(arg)
            return fn(arg)
        return wrapper

    for name in seen:
        monkeypatch.setattr(core, name, recording(name, getattr(core, name)))
    monkeypatch.setenv(counts.NO_CACHE_ENV, "1")
    yield seen


def test_a_prompt_read_from_disk_is_hashed_from_its_bytes(
        tmp_path: Path, digested: dict[str, list[object]]) -> None:
    prompt = "R\u00e9sum\u00e9 the text, \u65e5\u672c. " * 40
    ws = make_workspace(
        tmp_path / "ws", config={"model_context_window": 8192, "model_max_tokens": 512},
        prompts={"p.txt": BOM + prompt.encode()},
        pipelines={"f.yaml": "steps:\n  - {id: s, type: call_model, prompt_key: p,"
                             " max_output_tokens: 10}\n"})
    report = check_pipeline(ws / "pipelines" / "f.yaml", files=DiskFiles(),
                            options=CheckOptions(environ={}), cache=BudgetCache())
    assert report.steps[0].system_prompt.value == tokens(prompt)
    assert prompt not in digested["text_digest"]  # never encoded to be hashed
    assert digested["utf8_digest"] == [prompt.encode()]  # its bytes, less the BOM, once
    assert digested["content_hash"] == digested["utf8_hash"] == []


def test_a_count_from_bytes_is_keyed_as_the_text(digested: dict[str, list[object]]) -> None:
    """The memo key made from the bytes is the text's: a later count of the text (an editor
    buffer, a template) finds it, as a counter in another process does."""
    tokenizer = core.get_tokenizer("cl100k_base")
    counter = TokenCounter(tokenizer)
    counter.keep_fresh()
    text = "caf\u00e9 " * 30
    assert counter.count(text, utf8=text.encode()) == tokens(text)
    assert counter.count(text) == tokens(text)
    assert (counter.hits, counter.misses) == (1, 1)
    assert counter.take_fresh() == [(text_digest(text).hex(), tokens(text))]
    plain = TokenCounter(core.FunctionTokenizer("words", lambda t: len(t.split())))
    assert plain.count(text, utf8=text.encode()) == 30
    assert plain.count(text) == 30
    assert (plain.hits, plain.misses) == (1, 1)
    assert digested["utf8_hash"] == [text.encode()]
    assert digested["content_hash"] == [text]
