"""A report carries the fingerprints of the files its check read, and a cache for one run keeps
no results (what ``budgetlens check`` keys its result cache by, without subclassing the core's
cache).

The expected fingerprints are written from ``os.stat`` of each file, in the form
``DiskFiles`` documents (``disk:mtime_ns:ctime_ns:size:inode:mode``), or ``missing`` for a
place looked at that holds no file.
"""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path

from budgetlens.contract.cache import BudgetCache
from budgetlens.contract.check import check_pipeline
from budgetlens.contract.results import CheckOptions
from budgetlens.files import DiskFiles
from budgetlens.serialize import to_jsonable
from tests.core.contract.helpers import chain_workspace

OPTS = CheckOptions(environ={})


def _stat(path: Path) -> str:
    st = os.stat(path)
    return f"disk:{st.st_mtime_ns}:{st.st_ctime_ns}:{st.st_size}:{st.st_ino}:{st.st_mode}"


def _ws(tmp_path: Path) -> Path:
    return chain_workspace(tmp_path / "ws")


def test_a_report_carries_the_fingerprint_of_every_file_it_read(tmp_path: Path) -> None:
    ws = _ws(tmp_path)
    report = check_pipeline(ws / "pipelines" / "child.yaml", files=DiskFiles(), options=OPTS)
    fingerprints = report.input_fingerprints
    assert fingerprints is not None
    for name in ("pipelines/child.yaml", "pipelines/base.yaml", "prompts/sys.txt",
                 "config.json"):
        path = os.path.normpath(ws / name)
        assert fingerprints[path] == _stat(ws / name), name
    for path, fingerprint in fingerprints.items():  # the rest: places looked at, empty
        if not os.path.exists(path):
            assert fingerprint == "missing", path
    assert set(report.inputs) <= set(fingerprints)
    # not part of the report's JSON, nor of its equality
    assert "input_fingerprints" not in to_jsonable(report)
    assert dataclasses.replace(report, input_fingerprints={}) == report


def test_a_report_from_the_cache_carries_the_fingerprints_it_was_made_with(
        tmp_path: Path) -> None:
    ws = _ws(tmp_path)
    cache = BudgetCache()
    first = check_pipeline(ws / "pipelines" / "child.yaml", files=DiskFiles(), options=OPTS,
                           cache=cache)
    again = check_pipeline(ws / "pipelines" / "child.yaml", files=DiskFiles(), options=OPTS,
                           cache=cache)
    assert again is first and cache.hits == 1
    prompt = ws / "prompts" / "sys.txt"
    prompt.write_text("one two three four five", "utf-8")
    edited = check_pipeline(ws / "pipelines" / "child.yaml", files=DiskFiles(), options=OPTS,
                            cache=cache)
    assert edited.input_fingerprints is not None
    assert edited.input_fingerprints[os.path.normpath(prompt)] == _stat(prompt)
    assert first.input_fingerprints is not None
    assert first.input_fingerprints[os.path.normpath(prompt)] != _stat(prompt)


def test_a_cache_that_keeps_no_results_stores_no_report_and_no_structure(
        tmp_path: Path) -> None:
    ws = _ws(tmp_path)
    cache = BudgetCache(keep_results=False)
    first = check_pipeline(ws / "pipelines" / "child.yaml", files=DiskFiles(), options=OPTS,
                           cache=cache)
    again = check_pipeline(ws / "pipelines" / "child.yaml", files=DiskFiles(), options=OPTS,
                           cache=cache)
    assert again is not first and again == first  # checked twice, the same result
    assert again.input_fingerprints == first.input_fingerprints
    sizes = cache.sizes()
    assert (sizes["reports"], sizes["structures"]) == (0, 0), sizes
    assert cache.hits == 0
    # what another pipeline can use is kept: the parent's parse, the prompt's count
    assert cache.has_parsed("pipeline", os.path.normpath(ws / "pipelines" / "base.yaml"))
    assert sizes["counters"] == 1


def test_a_cache_that_keeps_results_stores_both(tmp_path: Path) -> None:
    ws = _ws(tmp_path)
    cache = BudgetCache()
    check_pipeline(ws / "pipelines" / "child.yaml", files=DiskFiles(), options=OPTS,
                   cache=cache)
    sizes = cache.sizes()
    assert (sizes["reports"], sizes["structures"]) == (1, 1), sizes
