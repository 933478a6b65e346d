"""Skip a build whose inputs are unchanged, and let one builder at a time write an output.

A build's key hashes its inputs (a JSON description plus file contents). The key is written to
a stamp beside the output (never inside it: the stamp must not end up in the zip) once the
output is complete, so an interrupted build is redone next time. Builds take a file lock, so
parallel test workers share one build instead of racing on the same folder.

A build says what it does on standard error (`progress`): a line when it starts and one with its
elapsed time when it ends, and a command run with `echo` streams its output (pip's "Collecting" and
"Downloading" lines), so `make synth` is never silent for minutes.
"""

from __future__ import annotations

import collections
import fcntl
import hashlib
import json
import shutil
import subprocess
import sys
import time
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


# The end of a failed command's output that its error quotes.
FAILURE_TAIL_LINES: Final = 60


def progress(message: str) -> None:
    """One line about a build step, on standard error (standard output is the build's result)."""
    print(message, file=sys.stderr, flush=True)


def run(command: Sequence[str], what: str, *, echo: bool = False) -> None:
    """Run a build command; on failure, raise with the end of its output.

    `echo`: stream the command's output as it comes, indented (for commands that take a while)."""
    with subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, errors="replace"
    ) as process:
        assert process.stdout is not None
        tail: collections.deque[str] = collections.deque(maxlen=FAILURE_TAIL_LINES)
        for line in process.stdout:
            tail.append(line)
            if echo:
                progress("    " + line.rstrip())
    if process.returncode != 0:
        output = "".join(tail).strip()
        raise AssetBuildError(f"{what} failed (exit {process.returncode}):\n{output}")


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
        started = time.monotonic()
        label = f"{dest.parent.name}/{dest.name}"  # layers/deps-arm64, functions/ingest
        progress(f"== Building {label} (its inputs changed, or it was never built)")
        tmp = dest.with_name(f".tmp-{dest.name}")
        shutil.rmtree(tmp, ignore_errors=True)
        build(tmp)
        stamp_path(dest).unlink(missing_ok=True)
        if dest.exists():
            shutil.rmtree(dest)
        tmp.rename(dest)
        # Written last: a build interrupted before this point is redone next time.
        stamp_path(dest).write_text(json.dumps({"key": key, "inputs": inputs}, indent=2, default=str))
        progress(f"   built {label} in {time.monotonic() - started:.1f} s")
    return dest
