"""moto's server lists its own services once, not on every request (docs/architecture.md "Local stack").

moto 5.2's server picks each request's service under one global lock, and on the way lists the
directory of its own package, checking each of its ~200 entries on disk: a few percent of the
local stack's whole time under load, with every request waiting on that lock. The package does not
change while the stack runs. tests/integration/test_local_moto_dispatch.py shows moto still needs it.
"""

from collections.abc import Callable, Iterable
from typing import Any

from moto import backends as moto_backends

from local_stack.moto_patching import replace


def _listed_once(list_of_moto_modules: Callable[[], Iterable[str]]) -> Callable[[], Iterable[str]]:
    modules = tuple(list_of_moto_modules())
    return lambda: modules


def fix_moto_dispatch() -> None:
    """Install once."""
    backends: Any = moto_backends
    replace(backends, "list_of_moto_modules", (), _listed_once, by=__name__)
