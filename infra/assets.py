"""Lambda code and layer builds without Docker (DESIGN §7).

- Dependency layers: `pip install --platform manylinux… --only-binary=:all: --implementation cp
  --python-version 3.13 --target build/layers/<name>-<arch>/python`, then the distributions the
  Lambda runtime already ships (boto3, botocore, s3transfer) are removed, file by file from their
  RECORD.
- The `xray` and `llm` layers are resolved against the exact versions of the `deps` layer and
  lose every distribution `deps` already has, so they never overlap with it.
- Files no function uses (`UNUSED_FILES`: Powertools' Swagger UI assets, type stubs, …) are
  removed from the dependency layers; each entry says why that is safe.
- Dependency layers ship third-party code as bytecode only (`compile_bytecode_only`): legacy
  `.pyc` beside where each `.py` was, the `.py` removed (see `LAYER_MOUNT` for the trade-off).
- Source trees (the core package, each function's folder) are copied without caches and keep
  their sources (readable tracebacks for the project's own code).
- Everything is compiled by the runtime's Python version with
  `--invalidation-mode unchecked-hash`: CDK zips files with a 1980 timestamp, so
  timestamp-checked `.pyc` would be stale (and recompiled) on every cold start.
- A build is skipped when the hash of its inputs (requirement files, platform, Python
  version, sources, this builder's version) matches the stamp of the previous build. Builds
  take a file lock, so parallel test workers share one build.

This module does not import aws_cdk (the benchmark uses it too).
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import re
import shutil
import subprocess
import sys
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from infra import REPO_ROOT

BUILD_DIR: Final = REPO_ROOT / "build"
PYTHON_VERSION: Final = "3.13"
PYTHON_TAG: Final = "cpython-313"
# Bump to invalidate every stamp when the build procedure changes.
BUILDER_VERSION: Final = "4"

# Shipped by the Lambda Python runtime; a copy in a layer only adds size (and version skew).
RUNTIME_PROVIDED: Final = ("boto3", "botocore", "s3transfer")

# Lambda python3.13 runs on Amazon Linux 2023 (glibc 2.34): manylinux2014 and 2_28 wheels both load.
PLATFORM_TAGS: Final = {
    "arm64": ("manylinux2014_aarch64", "manylinux_2_28_aarch64"),
    "x86_64": ("manylinux2014_x86_64", "manylinux_2_28_x86_64"),
}


@dataclass(frozen=True)
class Unused:
    """Files of the dependency layers that no function uses (a glob under `python/`), and why."""

    pattern: str
    reason: str


# Removed from every dependency layer after pip install.
UNUSED_FILES: Final = (
    Unused(
        "aws_lambda_powertools/event_handler/openapi/swagger_ui/swagger-ui*.min.*",
        "Swagger UI's JavaScript and CSS (1.6 MB): read only by the route that "
        "`APIGatewayRestResolver.enable_swagger()` registers, and the service never enables it (it "
        "serves /v1/openapi.json from `get_openapi_json_schema`; tests/infra/test_assets.py checks no "
        "code calls enable_swagger). The swagger_ui Python modules stay, so imports are unchanged.",
    ),
    Unused("**/*.pyi", "type stubs: read by type checkers, never imported at run time"),
    Unused("*-stubs", "PEP 561 stub-only packages (e.g. wrapt-stubs): type checkers only"),
    Unused("pydantic/mypy.py", "pydantic's mypy plugin: loaded by mypy (`plugins = pydantic.mypy`) only"),
    Unused("pydantic/v1/mypy.py", "the same plugin for pydantic.v1 models: mypy only"),
    Unused(
        "pydantic/v1/_hypothesis_plugin.py",
        "Hypothesis strategies for pydantic.v1 types: only Hypothesis (a test tool) imports it, and "
        "pydantic 2 does not even register it as an entry point",
    ),
    Unused(
        "*.dist-info/RECORD",
        "pip's install manifest (what to uninstall, with hashes): it would list the .py files that "
        "bytecode-only removes, and nothing reads it at run time (importlib.metadata.files() is not "
        "used by these packages; version() and entry_points() read METADATA and entry_points.txt)",
    ),
    Unused("**/*.c", "C sources shipped beside compiled extensions: the built .so is what is imported"),
    Unused(
        "*/**/tests",
        "test suites inside a package (none today): run by the package's CI, never imported by the "
        "package itself",
    ),
)

# Third-party code in the dependency layers ships as bytecode only: `compileall -b` writes a
# legacy `.pyc` beside each `.py` (the import system loads it directly, as a sourceless module),
# then the `.py` is removed. A module is stored once instead of as source + __pycache__, which is
# what brings get_memory under its 10 MB target; imports load the same bytecode as before.
# The trade-off: a traceback through Powertools, pydantic, openai, … shows file and line but not
# the source text, and their source cannot be read at run time (`inspect.getsource`; packages
# that need it are in KEEP_SOURCES, and a test flags new ones). The project's own code (core
# layer, functions) keeps its sources, so tracebacks of our code stay readable. The bytecode
# records `/opt/python/<module path>` (where Lambda mounts layers) as its file name.
LAYER_MOUNT: Final = "/opt/python"

# Top-level packages that keep their sources (and __pycache__) because they read them at run time.
KEEP_SOURCES: Final = {
    "anyio": "anyio._lazyimport parses the package's own __init__ source (inspect.getsource) to "
    "build its lazy exports; without the source it falls back to importing every submodule eagerly.",
}

_IGNORED = shutil.ignore_patterns(
    "__pycache__", "*.pyc", "*.pyo", ".DS_Store", ".pytest_cache", ".mypy_cache"
)


class AssetBuildError(RuntimeError):
    """A layer or code build failed; the message says which and why."""


@dataclass(frozen=True)
class LayerSource:
    """A dependency layer built from a requirements file."""

    name: str
    requirements: Path
    # Layers whose distributions this one must not duplicate (and whose versions it must use).
    excludes: tuple[str, ...] = ()


DEPS_LAYER: Final = LayerSource("deps", REPO_ROOT / "layers" / "deps" / "requirements.txt")
# The X-Ray SDK, for ingest and condenser only (get_memory never loads it).
XRAY_LAYER: Final = LayerSource(
    "xray", REPO_ROOT / "layers" / "xray" / "requirements.txt", excludes=("deps",)
)
LLM_LAYER: Final = LayerSource("llm", REPO_ROOT / "layers" / "llm" / "requirements.txt", excludes=("deps",))
REQUIREMENT_LAYERS: Final = {layer.name: layer for layer in (DEPS_LAYER, XRAY_LAYER, LLM_LAYER)}
CORE_PACKAGE_DIR: Final = REPO_ROOT / "layers" / "core" / "src" / "hippocampus"
FUNCTIONS_DIR: Final = REPO_ROOT / "functions"


# ----------------------------------------------------------------------------- helpers


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


def _canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _dist_infos(site: Path) -> dict[str, Path]:
    """Canonical distribution name → its .dist-info folder."""
    found = {}
    for info in site.glob("*.dist-info"):
        name = info.name.removesuffix(".dist-info").rsplit("-", 1)[0]
        found[_canonical(name)] = info
    return found


def _dist_version(info: Path) -> str:
    return info.name.removesuffix(".dist-info").rsplit("-", 1)[1]


def _remove_distribution(site: Path, info: Path) -> None:
    """Delete every file a distribution installed (from its RECORD), then its empty folders."""
    record = info / "RECORD"
    folders: set[Path] = set()
    if record.exists():
        for line in record.read_text(encoding="utf-8").splitlines():
            relative = line.split(",", 1)[0]
            if not relative:
                continue
            path = (site / relative).resolve()
            if site.resolve() not in path.parents:
                continue  # e.g. ../../bin/script: outside the layer
            if path.is_file() or path.is_symlink():
                path.unlink()
            folders.add(path.parent)
    shutil.rmtree(info, ignore_errors=True)
    for folder in sorted(folders, key=lambda p: len(p.parts), reverse=True):
        while folder != site.resolve() and folder.exists() and not any(folder.iterdir()):
            folder.rmdir()
            folder = folder.parent


def _hash_tree(root: Path) -> Iterator[bytes]:
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        relative = path.relative_to(root)
        if "__pycache__" in relative.parts or path.suffix in {".pyc", ".pyo"}:
            continue
        yield str(relative).encode()
        yield path.read_bytes()


def _digest(parts: Iterable[bytes | str]) -> str:
    digest = hashlib.sha256()
    for part in parts:
        digest.update(part.encode() if isinstance(part, str) else part)
        digest.update(b"\0")
    return digest.hexdigest()


@contextmanager
def _locked(name: str) -> Iterator[None]:
    BUILD_DIR.mkdir(parents=True, exist_ok=True)
    with (BUILD_DIR / f".{name}.lock").open("w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _stamp(dest: Path) -> Path:
    """Kept beside the build, not in it: the stamp must not end up in the zip."""
    return dest.with_name(dest.name + ".stamp.json")


def read_stamp_key(dest: Path) -> str | None:
    try:
        key = json.loads(_stamp(dest).read_text())["key"]
    except (OSError, ValueError, KeyError):
        return None
    return str(key) if dest.is_dir() else None


def _stamp_matches(dest: Path, key: str) -> bool:
    return read_stamp_key(dest) == key


def _run(command: Sequence[str], what: str) -> None:
    result = subprocess.run(command, capture_output=True, text=True, check=False)
    if result.returncode != 0:
        output = (result.stdout + result.stderr).strip()[-4000:]
        raise AssetBuildError(f"{what} failed (exit {result.returncode}):\n{output}")


def compile_tree(root: Path, *, legacy_to: str | None = None) -> None:
    """Compile every module for the runtime, hash-based and never re-checked against the source.

    `legacy_to`: write legacy `.pyc` beside the sources (`-b`) that record `<legacy_to>/<relative
    path>` as their file name (`-d`), instead of `__pycache__/<name>.cpython-313.pyc`.
    """
    command = [find_runtime_python(), "-m", "compileall", "-q", "-f", "-j", "0"]
    if legacy_to is not None:
        command += ["-b", "-d", legacy_to]
    command += ["--invalidation-mode", "unchecked-hash", str(root)]
    _run(command, f"compiling {root}")


def _is_under(path: Path, roots: Iterable[Path]) -> bool:
    return any(path == root or root in path.parents for root in roots)


def remove_unused(site: Path) -> None:
    """Delete what `UNUSED_FILES` declares (files or whole folders)."""
    for unused in UNUSED_FILES:
        for path in sorted(site.glob(unused.pattern), key=lambda p: len(p.parts), reverse=True):
            if path.is_dir() and not path.is_symlink():
                shutil.rmtree(path)
            elif path.exists() or path.is_symlink():
                path.unlink()


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


def _publish(tmp: Path, dest: Path, key: str, inputs: dict[str, object]) -> None:
    _stamp(dest).unlink(missing_ok=True)
    if dest.exists():
        shutil.rmtree(dest)
    tmp.rename(dest)
    # Written last: a build interrupted before this point is redone next time.
    _stamp(dest).write_text(json.dumps({"key": key, "inputs": inputs}, indent=2, default=str))


# ----------------------------------------------------------------------------- builds


def layer_dir(name: str, architecture: str | None = None) -> Path:
    """The folder CDK zips for a layer (it holds `python/`)."""
    return BUILD_DIR / "layers" / (f"{name}-{architecture}" if architecture else name)


def build_requirements_layer(layer: LayerSource, architecture: str) -> Path:
    """pip-install a requirements file for the Lambda platform; skipped when the inputs are unchanged."""
    if architecture not in PLATFORM_TAGS:
        raise AssetBuildError(f"unknown architecture {architecture!r}")
    # Dependencies first: this layer is resolved against their exact versions.
    excluded = [build_requirements_layer(REQUIREMENT_LAYERS[name], architecture) for name in layer.excludes]
    dest = layer_dir(layer.name, architecture)
    platforms = PLATFORM_TAGS[architecture]
    excluded_keys = [read_stamp_key(d) for d in excluded]
    inputs: dict[str, object] = {
        "builder": BUILDER_VERSION,
        "requirements": str(layer.requirements.relative_to(REPO_ROOT)),
        "platforms": platforms,
        "python_version": PYTHON_VERSION,
        "implementation": "cp",
        "dropped": RUNTIME_PROVIDED,
        "excluded_layers": excluded_keys,
        "unused": [unused.pattern for unused in UNUSED_FILES],
        "bytecode_only": True,
        "layer_mount": LAYER_MOUNT,
        "keep_sources": sorted(KEEP_SOURCES),
    }
    key = _digest([json.dumps(inputs, sort_keys=True), layer.requirements.read_bytes()])
    with _locked(dest.name):
        if _stamp_matches(dest, key):
            return dest
        tmp = dest.with_name(f".tmp-{dest.name}")
        shutil.rmtree(tmp, ignore_errors=True)
        site = tmp / "python"
        site.mkdir(parents=True)
        command = [sys.executable, "-m", "pip", "install", "--quiet", "--disable-pip-version-check"]
        command += ["--no-compile", "--only-binary=:all:", "--implementation", "cp"]
        command += ["--python-version", PYTHON_VERSION, "--target", str(site)]
        for platform in platforms:
            command += ["--platform", platform]
        command += ["-r", str(layer.requirements)]
        excluded_dists: dict[str, Path] = {}
        if excluded:
            constraints = tmp / "constraints.txt"
            pins = []
            for other in excluded:
                for name, info in _dist_infos(other / "python").items():
                    excluded_dists[name] = info
                    pins.append(f"{name}=={_dist_version(info)}")
            constraints.write_text("\n".join(sorted(pins)) + "\n")
            command += ["-c", str(constraints)]
        _run(command, f"pip install of layer {layer.name!r} ({architecture})")
        (tmp / "constraints.txt").unlink(missing_ok=True)
        dropped = {_canonical(n) for n in RUNTIME_PROVIDED} | set(excluded_dists)
        for name, info in _dist_infos(site).items():
            if name in dropped:
                _remove_distribution(site, info)
        shutil.rmtree(site / "bin", ignore_errors=True)  # console scripts: useless in a layer
        remove_unused(site)
        compile_bytecode_only(site)
        _publish(tmp, dest, key, inputs)
    return dest


def build_source_layer(name: str, package_dir: Path) -> Path:
    """A layer holding one pure-Python package (`python/<package>`), compiled; architecture-free."""
    dest = layer_dir(name)
    inputs: dict[str, object] = {"builder": BUILDER_VERSION, "python_version": PYTHON_VERSION}
    key = _digest([json.dumps(inputs, sort_keys=True), *_hash_tree(package_dir)])
    with _locked(dest.name):
        if _stamp_matches(dest, key):
            return dest
        tmp = dest.with_name(f".tmp-{dest.name}")
        shutil.rmtree(tmp, ignore_errors=True)
        shutil.copytree(package_dir, tmp / "python" / package_dir.name, ignore=_IGNORED)
        compile_tree(tmp / "python")
        _publish(tmp, dest, key, inputs)
    return dest


def build_function_code(name: str, functions_dir: Path = FUNCTIONS_DIR) -> Path:
    """A function's own folder, copied and compiled (its code asset)."""
    source = functions_dir / name
    if not (source / "handler.py").is_file():
        raise AssetBuildError(f"{source / 'handler.py'} is missing: every function needs a handler module")
    dest = BUILD_DIR / "functions" / name
    inputs: dict[str, object] = {"builder": BUILDER_VERSION, "python_version": PYTHON_VERSION}
    key = _digest([json.dumps(inputs, sort_keys=True), str(source.resolve()), *_hash_tree(source)])
    with _locked(f"function-{name}"):
        if _stamp_matches(dest, key):
            return dest
        tmp = dest.with_name(f".tmp-{name}")
        shutil.rmtree(tmp, ignore_errors=True)
        shutil.copytree(source, tmp, ignore=_IGNORED)
        compile_tree(tmp)
        _publish(tmp, dest, key, inputs)
    return dest


@dataclass(frozen=True)
class BuiltAssets:
    """Folders to hand to `Code.from_asset`: layers by name, and function code by function name."""

    layers: dict[str, Path]
    functions: dict[str, Path]


def build_all(
    architecture: str, functions: Sequence[str], functions_dir: Path = FUNCTIONS_DIR
) -> BuiltAssets:
    layers = {
        name: build_requirements_layer(layer, architecture) for name, layer in REQUIREMENT_LAYERS.items()
    }
    layers["core"] = build_source_layer("core", CORE_PACKAGE_DIR)
    return BuiltAssets(
        layers=layers,
        functions={name: build_function_code(name, functions_dir) for name in functions},
    )
