"""Where the continuation modules hold the standard library's C scanners.

``syntax`` binds ``_scan_once`` (a whole value) and ``_scanstring`` (a string) once. ``runs``
and ``cut`` import what they call, so each module holds its own reference. A test that wraps
a scanner to count what it reads wraps it in every module of ``SCANNER_HOMES``: wrapping one
module would miss the calls made from the others.
``test_single_parse.py::test_every_module_that_holds_a_scanner_is_counted`` keeps the list
complete.
"""

from __future__ import annotations

from types import ModuleType
from typing import Any

import pytest

from budgetlens.continuation import cut, runs, syntax

SCANNER_HOMES: tuple[ModuleType, ...] = (syntax, runs, cut)


def wrap_scanner(mp: pytest.MonkeyPatch, name: str, wrapper: Any) -> None:
    """Replace the scanner ``name`` by ``wrapper`` in every module that holds it."""
    for module in SCANNER_HOMES:
        if hasattr(module, name):
            mp.setattr(module, name, wrapper)
