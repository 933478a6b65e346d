"""Replacing one of moto's internals, and failing loudly when moto no longer has it as patched.

The local stack's fixes of moto (docs/architecture.md "Local stack") replace attributes that are not
moto's API. moto is pinned (requirements-local.txt); when it moves, `replace` refuses a target
that is gone or whose parameters changed, at the stack's start, naming the patch, instead of
installing a fix that no longer fits. moto's original is kept as `moto_<name>` on its owner: the
tests that moto still needs a fix run it (tests/integration/test_local_moto*.py).
"""

import inspect
from collections.abc import Callable
from importlib.metadata import version
from typing import Any


class MotoChanged(RuntimeError):
    """moto's internals are not those a patch of the local stack was written for."""


def original_name(name: str) -> str:
    """Where moto's original of `name` is kept on its owner."""
    return f"moto_{name.lstrip('_')}"


def _parameters(target: Any) -> tuple[str, ...] | None:
    function: Any = target.fget if isinstance(target, property) else target
    try:
        return tuple(inspect.signature(function).parameters)
    except (TypeError, ValueError):
        return None  # a module, a class attribute that is no function: nothing to compare


def replace(
    owner: Any, name: str, parameters: tuple[str, ...] | None, patched: Callable[[Any], Any], by: str
) -> None:
    """Set `owner.name` to `patched(moto's original)`, once. `parameters`: the original's (a property's
    getter's) first parameters, those the patch relies on; None for what has none (a module). `by`: the
    patch's module (`__name__`), for the message."""
    kept = original_name(name)
    if kept in vars(owner):
        return
    original = require(owner, name, parameters, by)
    setattr(owner, kept, original)
    setattr(owner, name, patched(original))


def require(owner: Any, name: str, parameters: tuple[str, ...] | None, by: str) -> Any:
    """`owner.name`, which a patch relies on, if moto still has it, its parameters starting as given."""
    where = f"{getattr(owner, '__name__', owner)}.{name}"
    if not hasattr(owner, name):
        raise _changed(by, f"{where} is gone")
    found = getattr(owner, name)
    has = _parameters(found)
    if parameters is not None and (has is None or has[: len(parameters)] != parameters):
        raise _changed(by, f"{where} takes {has}, not {parameters}")
    return found


def _changed(by: str, what: str) -> MotoChanged:
    return MotoChanged(
        f"moto {version('moto')} changed what {by.replace('.', '/')}.py patches: {what}. Check whether moto still "
        "needs the fix (its test in tests/integration/test_local_moto*.py), then adapt or drop it; "
        "requirements-local.txt pins the moto it was written for."
    )
