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
