"""What each function is: memory, timeout, layers (no aws_cdk import: the local stack reads it too)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final, Literal

from hippocampus import schema

FunctionName = Literal["get_memory", "ingest", "condenser"]


@dataclass(frozen=True)
class FunctionSpec:
    name: FunctionName
    description: str
    memory_mb: int
    timeout_s: int
    layers: tuple[str, ...]


# The read path gets more memory (hence CPU) for its cold start; the condenser mostly waits on the LLM.
FUNCTION_SPECS: Final = (
    FunctionSpec(
        "get_memory",
        "Hippocampus read path: memory, history, jobs, health, OpenAPI (405 for other methods).",
        memory_mb=1024,
        timeout_s=10,
        layers=("deps", "core"),
    ),
    FunctionSpec(
        "ingest",
        "Hippocampus write path: ingest items, replace or delete a memory, delete a fact.",
        memory_mb=1024,
        timeout_s=15,
        layers=("deps", "core"),
    ),
    FunctionSpec(
        "condenser",
        "Hippocampus condenser: merges queued items into each user's memory with the LLM.",
        memory_mb=512,
        timeout_s=schema.CONDENSER_TIMEOUT_S,
        layers=("deps", "llm", "core"),
    ),
)
FUNCTION_NAMES: Final = tuple(spec.name for spec in FUNCTION_SPECS)
