"""Skip a build whose inputs are unchanged, and let one builder at a time write an output.

A build's key hashes its inputs (a JSON description plus file contents). The key is written to
a stamp beside the output (never inside it: the stamp must not end up in the zip) once the
output is complete, so an interrupted build is redone next time. Builds take a file lock, so
parallel test workers share one build instead of racing on the same folder.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import shutil
import subprocess
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Final

from tools import REPO_ROOT

# Read at call time (`cache.BUILD_DIR`), so that tests can point the builds at a temporary folder.
BUILD_DIR: Path = REPO_ROOT / "build"
# Bump to invalidate every stamp when the build procedure changes what it produces.
BUILDER_VERSION: Final = "4"
# Caches and editor files never shipped from a source tree.
IGNORED: Final = shutil.ignore_patterns(
    "__pycache__", "*.pyc", "*.pyo", ".DS_Store", ".pytest_cache", ".mypy_cache"
)


class AssetBuildError(RuntimeError):
    """A layer or code build failed; the message says which and why."""


def run(command: Sequence[str], what: str) -> None:
    """Run a build command; on failure, raise with the end of its output."""
    result = subprocess.run(command, capture_output=True, text=True, check=False)
    if result.returncode != 0:
        output = (result.stdout + result.stderr).strip()[-4000:]
        raise AssetBuildError(f"{what} failed (exit {result.returncode}):\n{output}")


def hash_tree(root: Path) -> Iterator[bytes]:
    """Relative path and content of every file under `root`, bytecode and caches excepted."""
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        relative = path.relative_to(root)
        if "__pycache__" in relative.parts or path.suffix in {".pyc", ".pyo"}:
            continue
        yield str(relative).encode()
        yield path.read_bytes()


def digest(parts: Iterable[bytes | str]) -> str:
    hasher = hashlib.sha256()
    for part in parts:
        hasher.update(part.encode() if isinstance(part, str) else part)
        hasher.update(b"\0")
    return hasher.hexdigest()


@contextmanager
def locked(name: str) -> Iterator[None]:
    BUILD_DIR.mkdir(parents=True, exist_ok=True)
    with (BUILD_DIR / f".{name}.lock").open("w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def stamp_path(dest: Path) -> Path:
    return dest.with_name(dest.name + ".stamp.json")


def read_stamp_key(dest: Path) -> str | None:
    """The key of the complete build in `dest`, or None (never built, or interrupted)."""
    try:
        key = json.loads(stamp_path(dest).read_text())["key"]
    except (OSError, ValueError, KeyError):
        return None
    return str(key) if dest.is_dir() else None


def build_once(
    dest: Path,
    inputs: dict[str, object],
    contents: Iterable[bytes | str],
    build: Callable[[Path], None],
    *,
    lock: str | None = None,
) -> Path:
    """`dest`, built by `build(tmp)` into a temporary folder unless its stamp matches the inputs.

    `inputs` (JSON, recorded in the stamp) and `contents` (file contents, hashed only) make the key.
    """
    key = digest([json.dumps(inputs, sort_keys=True), *contents])
    with locked(lock or dest.name):
        if read_stamp_key(dest) == key:
            return dest
        tmp = dest.with_name(f".tmp-{dest.name}")
        shutil.rmtree(tmp, ignore_errors=True)
        build(tmp)
        stamp_path(dest).unlink(missing_ok=True)
        if dest.exists():
            shutil.rmtree(dest)
        tmp.rename(dest)
        # Written last: a build interrupted before this point is redone next time.
        stamp_path(dest).write_text(json.dumps({"key": key, "inputs": inputs}, indent=2, default=str))
    return dest
