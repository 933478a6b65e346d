"""The composition root builds each adapter and service once per process, and `reset()` forgets them all."""

import pytest

from hippocampus import wiring
from hippocampus.contracts.errors import ConfigurationError


@pytest.fixture
def environment(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    monkeypatch.setenv("MEMORY_TABLE_NAME", "first-table")
    monkeypatch.setenv("MEMORY_BUCKET_NAME", "first-bucket")
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    wiring.reset()
    yield monkeypatch
    wiring.reset()


def test_each_service_is_built_once_per_process(environment: pytest.MonkeyPatch) -> None:
    assert wiring.read_service() is wiring.read_service()
    assert wiring.export_service() is wiring.export_service()


def test_reset_builds_everything_again_from_the_new_environment(environment: pytest.MonkeyPatch) -> None:
    services = [wiring.read_service(), wiring.list_service(), wiring.recall_store(), wiring.edit_service()]
    environment.setenv("MEMORY_TABLE_NAME", "second-table")
    wiring.reset()
    rebuilt = [wiring.read_service(), wiring.list_service(), wiring.recall_store(), wiring.edit_service()]
    assert all(new is not old for new, old in zip(rebuilt, services, strict=True))
    assert wiring.get_settings().table_name == "second-table"


@pytest.mark.parametrize(
    ("variable", "value", "named"),
    [
        ("MEMORY_TABLE_NAME", None, "MEMORY_TABLE_NAME must be set"),
        ("MEMORY_TABLE_NAME", "", "MEMORY_TABLE_NAME must be set"),
        ("MEMORY_TRACING", "", "MEMORY_TRACING"),
        ("MEMORY_TRACING", "OTEL", "MEMORY_TRACING"),
    ],
)
def test_the_memory_reads_own_settings_fail_get_memorys_cold_start(
    environment: pytest.MonkeyPatch, variable: str, value: str | None, named: str
) -> None:
    if value is None:
        environment.delenv(variable)
    else:
        environment.setenv(variable, value)
    with pytest.raises(ConfigurationError, match=named):
        wiring.get_memory_handler()


def test_get_memorys_other_settings_are_checked_when_its_resolver_is_built(
    environment: pytest.MonkeyPatch,
) -> None:
    environment.setenv("memory_table_name", "lower-case-spelling")  # any case, as the settings read it
    environment.delenv("MEMORY_TABLE_NAME")
    environment.setenv("MEMORY_MAX_WORDS", "2")
    wiring.get_memory_handler()  # the fast lane needs the table's name only
    with pytest.raises(ConfigurationError, match="MEMORY_MAX_WORDS"):
        wiring.read_api()
