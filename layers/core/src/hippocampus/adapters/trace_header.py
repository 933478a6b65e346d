"""The trace header Lambda gives an invocation, shared by the tracing adapters."""

import os
from collections.abc import Callable
from typing import Final

# The Lambda runtime puts the trace header of the current invocation here (active tracing).
LAMBDA_TRACE_ENV: Final = "_X_AMZN_TRACE_ID"

Annotation = str | int
HeaderSource = Callable[[], str | None]


def lambda_trace_header() -> str | None:
    """The trace header Lambda set for the current invocation (`_X_AMZN_TRACE_ID`), if any.

    Read at call time: the Python runtime updates the variable on every invocation.
    """
    return os.getenv(LAMBDA_TRACE_ENV) or None
