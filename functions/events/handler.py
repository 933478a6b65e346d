"""events: the table's change stream published on EventBridge (docs/architecture.md "Events")."""

from hippocampus.wiring import events_handler

lambda_handler = events_handler()  # a missing MEMORY_EVENT_BUS_NAME fails here
