"""URIs of file names that are not valid UTF-8 (issue 30, case 11).

A Linux file name is bytes; Python gives the bytes that are not UTF-8 as surrogate escapes
(``os.fsdecode``). The URI percent-encodes each such byte and reads back to the same bytes;
a UTF-8 name keeps the URI pygls gives it.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from budgetlens_lsp.convert import path_from_uri, uri_from_path

pytestmark = pytest.mark.skipif(os.name == "nt", reason="POSIX file names are bytes")


@pytest.mark.parametrize("raw, uri", [
    (b"/ws/pipelines/bad\xff.yaml", "file:///ws/pipelines/bad%FF.yaml"),
    (b"/ws/\xe9t\xe9 %/\xc3(x.yaml", "file:///ws/%E9t%E9%20%25/%C3%28x.yaml"),
    (b"/ws/caf\xc3\xa9/a b#?.yaml", "file:///ws/caf%C3%A9/a%20b%23%3F.yaml"),
    (b"/ws/\xef\xbf\xbd.yaml", "file:///ws/%EF%BF%BD.yaml"),  # a real U+FFFD in the name
])
def test_uri_round_trip_keeps_the_bytes(raw: bytes, uri: str) -> None:
    path = os.fsdecode(raw)
    assert uri_from_path(path) == uri
    assert uri_from_path(Path(path)) == uri
    back = path_from_uri(uri)
    assert back is not None and os.fsencode(back) == raw


def test_a_file_without_a_uri_does_not_drop_the_batch(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """One file whose URI cannot be built is left out of the publish batch; the others are
    in it (it was the whole batch that failed, case 11)."""
    import shutil

    from budgetlens_lsp.features import diagnostics as diagnostics_module
    from budgetlens_lsp.features.state import Analysis
    from budgetlens_lsp.workspace_index import IndexMode, Snapshot, norm

    examples = Path(__file__).resolve().parents[3] / "examples"
    shutil.copytree(examples, tmp_path / "ws")
    root = norm(tmp_path / "ws")
    analysis = Analysis()
    results = diagnostics_module.update(analysis, Snapshot(roots=(root,)), frozenset(),
                                        IndexMode.FULL)
    prompt = norm(Path(root) / "prompts/report.txt")  # the over-budget step shows there too
    long_report = norm(Path(root) / "pipelines/long_report.yaml")
    assert {prompt, long_report} <= set(results.publish)
    real = diagnostics_module.uri_from_path

    def failing(path: str | Path) -> str:
        if str(path) == prompt:
            raise UnicodeEncodeError("utf-8", "x", 0, 1, "surrogates not allowed")
        return real(path)

    monkeypatch.setattr(diagnostics_module, "uri_from_path", failing)
    batch = diagnostics_module.publish_params(analysis.index, results.publish)
    uris = {p.uri: p for p in batch}
    assert real(prompt) not in uris
    assert [d.code for d in uris[real(long_report)].diagnostics] == ["BL050"]
    assert len(batch) == len(results.publish) - 1
