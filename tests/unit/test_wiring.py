"""The composition root builds each adapter and service once per process, and `reset()` forgets them all."""

import pytest

from hippocampus import wiring


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
