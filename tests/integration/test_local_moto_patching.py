"""The local stack's fixes of moto's internals refuse, at the stack's start, a moto that changed what
they patch (local_stack/moto_patching.py, docs/architecture.md "Local stack")."""

import re
from importlib.metadata import version
from typing import Any

import pytest

from local_stack.moto_patching import MotoChanged, replace
from local_stack.paths import REPO_ROOT


class _Moto:
    """Stands for a class of moto's."""

    def send(self, queue_name: str, body: str) -> str:
        return f"{queue_name}:{body}"


def _wrapped(original: Any) -> Any:
    return lambda self, queue_name, body: original(self, queue_name, body.upper())


def test_a_patch_replaces_its_target_once_and_keeps_motos_original() -> None:
    class Moto(_Moto):
        pass

    replace(Moto, "send", ("self", "queue_name"), _wrapped, by="local_stack.moto_example")
    replace(Moto, "send", ("self", "queue_name"), _wrapped, by="local_stack.moto_example")
    assert Moto().send("q", "hi") == "q:HI"
    assert Moto.moto_send(Moto(), "q", "hi") == "q:hi"  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("name", "parameters", "found"),
    [
        ("receive", ("self", "queue_name"), "Moto.receive is gone"),
        (
            "send",
            ("self", "queue_url"),
            "Moto.send takes ('self', 'queue_name', 'body'), not ('self', 'queue_url')",
        ),
    ],
)
def test_a_patch_of_what_moto_changed_fails_at_install_naming_it(
    name: str, parameters: tuple[str, ...], found: str
) -> None:
    class Moto(_Moto):
        pass

    with pytest.raises(MotoChanged) as failure:
        replace(Moto, name, parameters, _wrapped, by="local_stack.moto_example")
    message = str(failure.value)
    assert found in message
    assert f"moto {version('moto')}" in message and "local_stack/moto_example.py" in message
    assert "requirements-local.txt" in message
    assert not hasattr(Moto, f"moto_{name}")


def test_the_installed_moto_is_the_one_the_patches_were_written_for() -> None:
    """When this fails, moto was upgraded without the pin: run tests/integration -k local_moto on it, then
    move the pin in requirements-local.txt."""
    pinned = re.search(r"^moto\[server\]==(\S+)$", (REPO_ROOT / "requirements-local.txt").read_text(), re.M)
    assert pinned is not None and pinned.group(1) == version("moto")
