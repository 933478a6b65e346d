"""Bytecode for the Lambda runtime: compile a tree, or ship a tree as bytecode only.

Everything is compiled by the runtime's Python version with `--invalidation-mode
unchecked-hash`: CDK zips files with a 1980 timestamp, so timestamp-checked `.pyc` would be stale
(and recompiled) on every cold start.

Third-party code in the dependency layers ships as bytecode only: `compileall -b` writes a
legacy `.pyc` beside each `.py` (the import system loads it directly, as a sourceless module),
then the `.py` is removed. A module is stored once instead of as source + __pycache__, which is
what brings get_memory under its 10 MB target; imports load the same bytecode as before.
The trade-off: a traceback through Powertools, pydantic, openai, … shows file and line but not
the source text, and their source cannot be read at run time (`inspect.getsource`; packages
that need it are in KEEP_SOURCES, and a test flags new ones). The project's own code (core
layer, functions) keeps its sources, so tracebacks of our code stay readable.
"""

from __future__ import annotations

import shutil
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Final

from tools.cache import AssetBuildError, run

PYTHON_VERSION: Final = "3.13"
# The bytecode records `/opt/python/<module path>` (where Lambda mounts layers) as its file name.
LAYER_MOUNT: Final = "/opt/python"

# Top-level packages that keep their sources (and __pycache__) because they read them at run time.
KEEP_SOURCES: Final = {
    "anyio": "anyio._lazyimport parses the package's own __init__ source (inspect.getsource) to "
    "build its lazy exports; without the source it falls back to importing every submodule eagerly.",
}


def find_runtime_python() -> str:
    """A python3.13 interpreter to compile bytecode for the Lambda runtime."""
    if sys.version_info[:2] == (3, 13):
        return sys.executable
    candidates = [shutil.which("python3.13")]
    candidates += [str(p) for p in sorted(Path.home().glob(".pyenv/versions/3.13*/bin/python3.13"))]
    for candidate in candidates:
        if candidate:
            return candidate
    raise AssetBuildError(
        "python3.13 is needed to compile bytecode for the Lambda runtime; install it (pyenv install 3.13)"
    )


def compile_tree(root: Path, *, legacy_to: str | None = None) -> None:
    """Compile every module for the runtime, hash-based and never re-checked against the source.

    `legacy_to`: write legacy `.pyc` beside the sources (`-b`) that record `<legacy_to>/<relative
    path>` as their file name (`-d`), instead of `__pycache__/<name>.cpython-313.pyc`.
    """
    command = [find_runtime_python(), "-m", "compileall", "-q", "-f", "-j", "0"]
    if legacy_to is not None:
        command += ["-b", "-d", legacy_to]
    command += ["--invalidation-mode", "unchecked-hash", str(root)]
    run(command, f"compiling {root}")


def _is_under(path: Path, roots: Iterable[Path]) -> bool:
    return any(path == root or root in path.parents for root in roots)


def compile_bytecode_only(site: Path) -> None:
    """Legacy `.pyc` in place of every `.py` of `site`, except the packages of `KEEP_SOURCES`."""
    candidates = [site / name for name in KEEP_SOURCES] + [site / f"{name}.py" for name in KEEP_SOURCES]
    kept = [path for path in candidates if path.exists()]
    compile_tree(site, legacy_to=LAYER_MOUNT)
    for path in kept:
        # Back to the usual layout for these: sources, and their bytecode in __pycache__.
        for pyc in [path.with_suffix(".pyc")] if path.is_file() else path.rglob("*.pyc"):
            pyc.unlink(missing_ok=True)
        compile_tree(path)
    for source in site.rglob("*.py"):
        if _is_under(source, kept):
            continue
        if not source.with_suffix(".pyc").is_file():
            raise AssetBuildError(f"{source} was not compiled: it cannot ship as bytecode only")
        source.unlink()
