"""Settings for every test.

Hypothesis measures time by default: a 200 ms deadline per example and a health check that
fails when examples are slow to generate. On a busy machine both fail tests that are right,
so neither applies (tests wait for events, never for a length of time: tests/waiting.py).
"""

from __future__ import annotations

from hypothesis import HealthCheck, settings

settings.register_profile("budgetlens", deadline=None,
                          suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("budgetlens")
