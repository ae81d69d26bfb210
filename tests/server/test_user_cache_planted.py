"""A FIFO or a link to ``/dev/zero`` planted in the per-user cache neither hangs the language
server nor makes it read forever: it publishes what it publishes with a clean cache folder,
and logs one note (issue 30, case 3)."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from budgetlens.tokens import core, counts
from tests.server.test_startup import EXAMPLES, _start_and_publish


def _planted_paths(cache: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Path]:
    """The victim's secret, cl100k_base count file and rank file (the examples count with
    cl100k_base)."""
    meta = json.loads((core._DATA / "encodings.json").read_text("utf-8"))["encodings"]
    with monkeypatch.context() as m:
        m.setenv("XDG_CACHE_HOME", str(cache))
        m.delenv(counts.NO_CACHE_ENV, raising=False)
        store = counts.CountStore("cl100k_base", core._identity("cl100k_base",
                                                                meta["cl100k_base"]))
        file = store.file()
        ranks = core._rank_cache_file("cl100k_base", meta["cl100k_base"]["sha256"])
    assert file is not None and ranks is not None
    return {"secret": cache / "budgetlens" / "secret", "counts": file, "ranks": ranks}


@pytest.mark.parametrize("where", ["secret", "counts", "ranks"])
@pytest.mark.parametrize("planted", ["FIFO", "link to /dev/zero"])
async def test_a_planted_fifo_or_dev_zero_link_does_not_stop_the_server(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, where: str, planted: str) -> None:
    root = tmp_path / "ws"
    shutil.copytree(EXAMPLES, root)
    root = root.resolve()
    clean = await _start_and_publish(root, tmp_path / "clean", tmp_path / "clean.log")
    cache = tmp_path / "cache"
    path = _planted_paths(cache, monkeypatch)[where]
    path.parent.mkdir(parents=True, exist_ok=True)
    if planted == "FIFO":
        os.mkfifo(path)
    else:
        os.symlink("/dev/zero", path)
    got = await _start_and_publish(root, cache, tmp_path / "planted.log")
    assert got == clean
    log = (tmp_path / "planted.log").read_text("utf-8")
    assert str(path) in log and ("is not used" in log or "ignored the cache file" in log)
