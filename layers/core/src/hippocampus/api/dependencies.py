"""Dependency slots: what a route needs is declared as a provider that fails until it is wired.

Each routes module declares its slots (`def read_service() -> ReadService`) and takes them
through Powertools `Depends()`; `hippocampus.wiring` installs the real providers with the
resolver's `dependency_overrides`, and tests install fakes the same way.
"""

from typing import NoReturn

from aws_lambda_powertools.event_handler.depends import DependencyResolutionError


def unwired(name: str) -> NoReturn:
    raise DependencyResolutionError(f"{name} has no provider: build the function with hippocampus.wiring")
