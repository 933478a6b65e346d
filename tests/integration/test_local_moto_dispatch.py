"""The local stack's moto picks a request's service without looking at the disk (local_stack/moto_dispatch.py,
docs/architecture.md "Local stack"): every AWS request of the functions went through a directory listing
under one lock."""

import os
import traceback
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import moto
import pytest
from moto import backends as moto_backends

from local_stack.moto_endpoint import MotoEndpoint

MOTO_PACKAGE = Path(moto.__file__).parent


@pytest.fixture
def dynamodb() -> Iterator[Any]:
    """A client of a started endpoint, its first request made (moto loads the service's model once)."""
    started = MotoEndpoint()
    client = boto3.client(
        "dynamodb",
        endpoint_url=started.start(),
        region_name="us-east-1",
        aws_access_key_id="x",
        aws_secret_access_key="x",
    )
    client.list_tables()
    yield client
    started.stop()


@pytest.fixture
def listings(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Each listing of moto's own package directory, by where it was made."""
    seen: list[str] = []
    real = os.listdir

    def listdir(path: Any = ".") -> list[str]:
        if Path(path) == MOTO_PACKAGE:
            seen.append(traceback.extract_stack(limit=2)[0].name)
        return real(path)

    monkeypatch.setattr(os, "listdir", listdir)
    return seen


def test_a_request_does_not_list_moto_on_disk(dynamodb: Any, listings: list[str]) -> None:
    for _ in range(3):
        assert isinstance(
            dynamodb.list_tables()["TableNames"], list
        )  # moto is shared by the tests of a worker
    assert listings == []


def test_moto_still_lists_its_package_for_every_request(dynamodb: Any, listings: list[str]) -> None:
    """When this fails, moto lists its services once itself: drop local_stack/moto_dispatch.py."""
    moto_listing = vars(moto_backends)["moto_list_of_moto_modules"]
    list(moto_listing())
    list(moto_listing())
    assert listings == ["list_of_moto_modules", "list_of_moto_modules"]
