"""The limits policy: what a contract violation means.

- ``fail_fast`` (development): a violation is an error; the run refuses to start.
- ``auto_clamp`` (production): a violation is a warning; the run clamps the budgets, never
  below their floors (``min_context_tokens``, ``min_output_tokens``).

Under both policies a step that fits only below those floors is an error (BL052): no clamp
makes the run safe, so it refuses to start (see ``contract.clamp.compute_clamp``).

The policy comes from, strongest first: an explicit override (``--policy``, an editor
setting), the environment variable ``PIPELINE_LIMITS_POLICY``, then development mode:
config.json ``development`` (or ``developement``), else the environment variable
``APP_DEVELOPMENT``; development gives ``fail_fast``, anything else ``auto_clamp``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import Enum

from budgetlens.contract.enums import PolicySource

POLICY_ENV = "PIPELINE_LIMITS_POLICY"
DEVELOPMENT_ENV = "APP_DEVELOPMENT"
_TRUE = ("1", "true", "yes", "on")


class Policy(str, Enum):
    FAIL_FAST = "fail_fast"
    AUTO_CLAMP = "auto_clamp"


@dataclass(frozen=True)
class PolicyChoice:
    policy: Policy
    source: PolicySource
    problem: str | None = None  # an override or env value that is not a policy


def parse_policy(value: str | Policy | None) -> Policy | None:
    if value is None or isinstance(value, Policy):
        return value
    text = value.strip().lower().replace("-", "_")
    for policy in Policy:
        if policy.value == text:
            return policy
    return None


def resolve_policy(*, override: str | Policy | None, environ: Mapping[str, str],
                   development: bool | None) -> PolicyChoice:
    problems: list[str] = []
    if override is not None:
        chosen = parse_policy(override)
        if chosen is not None:
            return PolicyChoice(chosen, PolicySource.OVERRIDE)
        problems.append(f"policy override {override!r} is not fail_fast or auto_clamp; ignored")
    env_value = environ.get(POLICY_ENV)
    if env_value:
        chosen = parse_policy(env_value)
        if chosen is not None:
            return PolicyChoice(chosen, PolicySource.ENV_POLICY, "; ".join(problems) or None)
        problems.append(f"{POLICY_ENV}={env_value!r} is not fail_fast or auto_clamp; ignored")
    problem = "; ".join(problems) or None
    if development is not None:
        return PolicyChoice(Policy.FAIL_FAST if development else Policy.AUTO_CLAMP,
                            PolicySource.CONFIG_DEVELOPMENT, problem)
    env_dev = environ.get(DEVELOPMENT_ENV)
    if env_dev:
        dev = env_dev.strip().lower() in _TRUE
        return PolicyChoice(Policy.FAIL_FAST if dev else Policy.AUTO_CLAMP,
                            PolicySource.ENV_DEVELOPMENT, problem)
    return PolicyChoice(Policy.AUTO_CLAMP, PolicySource.DEFAULT, problem)
