"""EventPublisher on Amazon EventBridge: one `PutEvents` entry per change, on the service's bus."""

from collections.abc import Callable
from typing import Any

from hippocampus.contracts.errors import DependencyUnavailable
from hippocampus.contracts.events import EVENT_SOURCE, ChangeEvent


class EventBridgePublisher:
    def __init__(self, bus_name: str, client: Callable[[], Any]) -> None:
        self._bus_name = bus_name
        self._client = client

    def publish(self, event: ChangeEvent) -> None:
        entry = {
            "Source": EVENT_SOURCE,
            "DetailType": event.detail_type,
            "Detail": event.detail.model_dump_json(),
            "EventBusName": self._bus_name,
        }
        answer = self._client().put_events(Entries=[entry])
        if answer.get("FailedEntryCount"):
            codes = [str(e.get("ErrorCode")) for e in answer.get("Entries", []) if e.get("ErrorCode")]
            raise DependencyUnavailable(f"EventBridge refused the event: {', '.join(codes) or 'unknown'}")
