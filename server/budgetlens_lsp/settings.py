"""Editor settings of the ``budgetlens`` section: typed, validated, with documented defaults.

Settings arrive as ``initializationOptions`` (the whole object, or the object under a
``budgetlens`` key), then from ``workspace/configuration`` (section ``budgetlens``), and again
on every ``workspace/didChangeConfiguration``. A value of the wrong type or out of range is
reported (one message naming the setting) and that one setting falls back to its default;
the others still apply.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from budgetlens.contract.policy import Policy
from budgetlens.serialize import JSON_KEY

# The defaults of budgetlens.continuation.contexts (DEFAULT_BUDGET, DEFAULT_MARKER), written
# out so that the server's start does not load get_contexts (tests/server/test_startup.py
# checks they are the same).
DEFAULT_HIERARCHY_BUDGET = 1000
DEFAULT_CUT_MARKER = "<<<CUT>>>"

POLICIES = tuple(p.value for p in Policy)  # the core's policies, as the client writes them
DEFAULT_DEBOUNCE_MS = 30


@dataclass(frozen=True)
class DiagnosticToggles:
    pipelines: bool = True
    prompts: bool = True
    truncated_json: bool = field(default=True, metadata={JSON_KEY: "truncatedJson"})


@dataclass(frozen=True)
class LensToggles:
    steps: bool = True
    prompts: bool = True
    settings: bool = True


@dataclass(frozen=True)
class Settings:
    """The effective settings. ``None`` means "as the workspace says" (config.json, env)."""

    policy: str | None = None
    tokenizer: str | None = None
    config_path: str | None = field(default=None, metadata={JSON_KEY: "configPath"})
    hierarchy_budget: int = field(default=DEFAULT_HIERARCHY_BUDGET,
                                  metadata={JSON_KEY: "hierarchyBudget"})
    cut_marker: str = field(default=DEFAULT_CUT_MARKER, metadata={JSON_KEY: "cutMarker"})
    debounce_ms: int = field(default=DEFAULT_DEBOUNCE_MS, metadata={JSON_KEY: "debounceMs"})
    diagnostics: DiagnosticToggles = field(default_factory=DiagnosticToggles)
    lenses: LensToggles = field(default_factory=LensToggles)


# camelCase name in the client's settings -> (field, validator)
_KEYS = {
    "policy": "policy",
    "tokenizer": "tokenizer",
    "configPath": "config_path",
    "hierarchyBudget": "hierarchy_budget",
    "cutMarker": "cut_marker",
    "debounceMs": "debounce_ms",
}
_DIAGNOSTIC_KEYS = {"pipelines": "pipelines", "prompts": "prompts",
                    "truncatedJson": "truncated_json"}
_LENS_KEYS = {"steps": "steps", "prompts": "prompts", "settings": "settings"}


def _check(key: str, value: Any) -> str | None:
    """An error message when ``value`` is not valid for setting ``key``."""
    if key == "policy":
        if value is not None and value not in POLICIES:
            return f"must be one of {', '.join(POLICIES)} or null"
    elif key in ("tokenizer", "configPath"):
        if value is not None and (not isinstance(value, str) or not value.strip()):
            return "must be a non-empty string or null"
    elif key == "hierarchyBudget":
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            return "must be an integer >= 0"
    elif key == "cutMarker":
        if not isinstance(value, str) or not value:
            return "must be a non-empty string"
    elif key == "debounceMs" and (
            isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= 5000):
        return "must be an integer between 0 and 5000"
    return None


def _toggles(raw: Any, name: str, keys: Mapping[str, str], current: Any,
             problems: list[str]) -> Any:
    if raw is None or (isinstance(raw, list) and not raw):
        return current
    if not isinstance(raw, Mapping):
        problems.append(f"budgetlens.{name} must be an object of booleans")
        return type(current)()
    values: dict[str, bool] = {}
    for key, value in raw.items():
        attr = keys.get(key)
        if attr is None:
            problems.append(f"budgetlens.{name}.{key} is not a setting")
        elif not isinstance(value, bool):
            problems.append(f"budgetlens.{name}.{key} must be true or false")
        else:
            values[attr] = value
    return replace(type(current)(), **values)


#: Keys of ``initializationOptions`` that are not settings: what the client can do
#: (``displaysCommandResults``: it shows command results itself; read by the features).
INIT_ONLY_KEYS = frozenset({"displaysCommandResults"})


def parse_settings(raw: Any) -> tuple[Settings, list[str]]:
    """Settings from a client's object; invalid entries fall back to defaults.

    Returns the settings and the problems found (empty when everything was valid).
    Unknown keys are reported but harmless.
    """
    problems: list[str] = []
    if raw is None or (isinstance(raw, list) and not raw):  # Lua encodes {} as []
        return Settings(), problems
    if isinstance(raw, Mapping) and isinstance(raw.get("budgetlens"), Mapping):
        raw = raw["budgetlens"]
    if not isinstance(raw, Mapping):
        return Settings(), [f"budgetlens settings must be an object, got {type(raw).__name__}"]
    defaults = Settings()
    values: dict[str, Any] = {}
    for key, value in ((k, v) for k, v in raw.items() if k not in INIT_ONLY_KEYS):
        if key == "diagnostics":
            values["diagnostics"] = _toggles(value, key, _DIAGNOSTIC_KEYS,
                                             defaults.diagnostics, problems)
            continue
        if key == "lenses":
            values["lenses"] = _toggles(value, key, _LENS_KEYS, defaults.lenses, problems)
            continue
        attr = _KEYS.get(key)
        if attr is None:
            problems.append(f"budgetlens.{key} is not a setting")
            continue
        error = _check(key, value)
        if error:
            problems.append(f"budgetlens.{key} {error} (got {value!r}); using the default"
                            f" {getattr(defaults, attr)!r}")
            continue
        if isinstance(value, str):
            value = value.strip() if key != "cutMarker" else value
        values[attr] = value
    return replace(defaults, **values), problems


__all__ = ["INIT_ONLY_KEYS", "POLICIES", "DiagnosticToggles", "LensToggles", "Settings",
           "parse_settings"]
