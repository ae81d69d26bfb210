"""Gateways and model variants: the two dated, sourced tables next to the registry.

``gateways.json``: per-request caps of a gateway in front of a model (GitHub Models answers
413 above them), chosen with ``gateway:`` in config.json or on a step. ``variants.json``:
limits a model has only when the request asks for them (Claude's 1M window needs a beta
header), chosen with ``variant:``. Both are read once, on first use; each number carries its
source, and a gateway whose numbers could not be sourced has none (``sourced`` false).
"""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass
from importlib import resources
from typing import Any


@dataclass(frozen=True)
class GatewayCap:
    """One gateway's per-request cap for one model."""

    gateway: str
    model: str
    max_input_tokens: int
    source: str
    note: str
    recorded: str

    @property
    def label(self) -> str:
        """``gateway github-models (https://..., recorded 2026-12-06)``."""
        return f"gateway {self.gateway} ({self.source}, recorded {self.recorded})"


@dataclass(frozen=True)
class Variant:
    """A model variant: its window, what the request must carry, and the source."""

    model: str
    name: str
    window: int
    requires: str
    source: str
    recorded: str

    @property
    def label(self) -> str:
        return f"variant {self.name} of {self.model} ({self.source}, recorded {self.recorded})"


def _load(name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(
        resources.files("budgetlens.models").joinpath(name).read_text("utf-8"))
    return data


@functools.lru_cache(maxsize=1)
def gateways() -> dict[str, Any]:
    """The bundled gateways table (``gateways.json``), read once."""
    return _load("gateways.json")


@functools.lru_cache(maxsize=1)
def variants() -> dict[str, Any]:
    """The bundled variants table (``variants.json``), read once."""
    return _load("variants.json")


def gateway_names() -> list[str]:
    return sorted(gateways()["gateways"])


def gateway_cap(gateway: str, model: str | None) -> GatewayCap | None:
    """The cap of ``gateway`` for ``model`` (a registry name); ``None`` when the table has
    none (an unknown gateway is told by ``gateway_names``)."""
    table = gateways()
    entry = table["gateways"].get(gateway)
    if entry is None or model is None:
        return None
    cap = entry["caps"].get(model)
    if cap is None:
        return None
    return GatewayCap(gateway, model, int(cap["max_input_tokens"]), str(cap["source"]),
                      str(cap.get("note", "")), str(table["recorded"]))


def gateway_unsourced(gateway: str) -> str | None:
    """What the table says it does not know for ``gateway`` (``other_models``)."""
    entry = gateways()["gateways"].get(gateway)
    return None if entry is None else entry.get("other_models")


def variant_names(model: str) -> list[str]:
    return sorted(variants()["variants"].get(model, {}))


def variant(model: str, name: str) -> Variant | None:
    """The variant ``name`` of the registry model ``model``, or ``None``."""
    table = variants()
    raw = table["variants"].get(model, {}).get(name)
    if raw is None:
        return None
    return Variant(model, name, int(raw["window"]), str(raw["requires"]), str(raw["source"]),
                   str(table["recorded"]))
