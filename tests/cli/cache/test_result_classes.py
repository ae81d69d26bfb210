"""The result cache keeps every kind of diagnostic payload.

A value the cache cannot encode as plain data is not kept: the pipeline is checked again on
every run. That is safe but silent, so a new payload class must be listed in
``cache_store._CLASSES``; this test fails when one is missing.
"""

from __future__ import annotations

import typing

from budgetlens import source
from budgetlens_cli import cache_store


def test_every_fix_payload_class_is_a_cached_result_class() -> None:
    members = typing.get_args(source.FixData)
    assert members, "source.FixData is a union of payload classes"
    listed = {(module, name) for module, name in cache_store._CLASSES.values()}
    missing = [cls.__name__ for cls in members if (cls.__module__, cls.__name__) not in listed]
    assert missing == []


def test_a_diagnostic_with_each_payload_round_trips_through_plain_data() -> None:
    for cls in typing.get_args(source.FixData):
        fields = {f: None for f in cls.__dataclass_fields__}
        payload = cls(**fields)
        diag = source.Diagnostic("a.yaml", source.Range.at(0, 0), source.Severity.ERROR,
                                 "BL050", "message", data=payload)
        assert cache_store._from_plain(cache_store._plain(diag)) == diag
        assert cache_store._from_plain(cache_store._plain(diag)).data == payload
