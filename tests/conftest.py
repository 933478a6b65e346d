"""Fixtures for every test."""

from collections.abc import Iterator

import pytest

from hippocampus.observability import metrics


@pytest.fixture(autouse=True)
def no_metrics_from_other_tests() -> Iterator[None]:
    """Powertools keeps data points process-wide until a handler flushes them: a test that calls a
    service directly must not leave its counts to the next test's handler."""
    metrics.clear_metrics()
    yield
    metrics.clear_metrics()
