"""The local stack's moto on a data directory, restarted as a new process starts: with an empty moto,
provisioned from cdk.json, then restored (local_stack/stack.py does the same)."""

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from moto.core.base_backend import BackendDict

from local_stack import defaults
from local_stack.aws import Resources, aws_client, provision
from local_stack.durable import Restored
from local_stack.moto_endpoint import MotoEndpoint

REGION = "us-east-1"


class DurableMoto:
    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.endpoint: MotoEndpoint | None = None
        self.resources: Resources | None = None
        self.restored: Restored | None = None

    def start(self) -> "DurableMoto":
        BackendDict.reset()  # what a new process has: nothing
        self.endpoint = MotoEndpoint(data_dir=self.directory)
        url = self.endpoint.start()
        self.resources = provision(url, REGION, defaults.load().config)
        self.restored = self.endpoint.restore()
        return self

    def stop(self) -> None:
        if self.endpoint is not None:
            self.endpoint.stop()
            self.endpoint = None

    def restart(self) -> "DurableMoto":
        self.stop()
        return self.start()

    def client(self, service: str) -> Any:
        assert self.endpoint is not None
        return aws_client(service, self.endpoint.url, REGION)

    @property
    def res(self) -> Resources:
        assert self.resources is not None
        return self.resources


@contextmanager
def durable_moto(directory: Path) -> Iterator[DurableMoto]:
    """A started `DurableMoto`; moto is emptied again afterwards, for the next test."""
    stack = DurableMoto(directory).start()
    try:
        yield stack
    finally:
        stack.stop()
        BackendDict.reset()
