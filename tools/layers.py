"""The dependency layers (deps, xray, llm): pip-installed for the Lambda platform, without Docker.

- `pip install --platform manylinux… --only-binary=:all: --implementation cp --python-version 3.13
  --target build/layers/<name>-<arch>/python`, then the distributions the Lambda runtime already
  ships (boto3, botocore, s3transfer) are removed, file by file (`importlib.metadata` files).
- The `xray` and `llm` layers are resolved against the exact versions of the `deps` layer and
  lose every distribution `deps` already has, so they never overlap with it in /opt/python.
- Files no function uses (`UNUSED_FILES`: Powertools' Swagger UI assets, type stubs, …) are
  removed; each entry says why that is safe.
- Third-party code then ships as bytecode only (`tools.bytecode.compile_bytecode_only`).
- A layer is rebuilt only when its inputs change (`tools.cache.build_once`).
"""

from __future__ import annotations

import re
import shutil
import sys
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Final

from tools import REPO_ROOT, cache
from tools.bytecode import KEEP_SOURCES, LAYER_MOUNT, PYTHON_VERSION, compile_bytecode_only
from tools.cache import BUILDER_VERSION, AssetBuildError, build_once, progress, read_stamp_key, run

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


def layer_dir(name: str, architecture: str | None = None) -> Path:
    """The folder CDK zips for a layer (it holds `python/`)."""
    return cache.BUILD_DIR / "layers" / (f"{name}-{architecture}" if architecture else name)


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
            shutil.rmtree(folder, ignore_errors=True)  # with anything pip left unlisted
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


def _pip_install(site: Path, layer: LayerSource, architecture: str, constraints: Path | None) -> None:
    # Not quiet: pip's "Collecting" and "Downloading" lines are the progress of the longest step.
    command = [sys.executable, "-m", "pip", "install", "--disable-pip-version-check", "--progress-bar", "off"]
    command += ["--no-compile", "--only-binary=:all:", "--implementation", "cp"]
    command += ["--python-version", PYTHON_VERSION, "--target", str(site)]
    for platform in PLATFORM_TAGS[architecture]:
        command += ["--platform", platform]
    command += ["-r", str(layer.requirements)]
    if constraints is not None:
        command += ["-c", str(constraints)]
    progress(f"   pip install -r {layer.requirements.relative_to(REPO_ROOT)} for Lambda {architecture}")
    run(command, f"pip install of layer {layer.name!r} ({architecture})", echo=True)


def build_requirements_layer(layer: LayerSource, architecture: str) -> Path:
    """pip-install a requirements file for the Lambda platform; skipped when the inputs are unchanged."""
    if architecture not in PLATFORM_TAGS:
        raise AssetBuildError(f"unknown architecture {architecture!r}")
    # Dependencies first: this layer is resolved against their exact versions.
    excluded = [build_requirements_layer(REQUIREMENT_LAYERS[name], architecture) for name in layer.excludes]
    inputs: dict[str, object] = {
        "builder": BUILDER_VERSION,
        "requirements": str(layer.requirements.relative_to(REPO_ROOT)),
        "platforms": PLATFORM_TAGS[architecture],
        "python_version": PYTHON_VERSION,
        "implementation": "cp",
        "dropped": RUNTIME_PROVIDED,
        "excluded_layers": [read_stamp_key(d) for d in excluded],
        "unused": [unused.pattern for unused in UNUSED_FILES],
        "bytecode_only": True,
        "layer_mount": LAYER_MOUNT,
        "keep_sources": sorted(KEEP_SOURCES),
    }

    def build(tmp: Path) -> None:
        site = tmp / "python"
        site.mkdir(parents=True)
        pins = {name: version for other in excluded for name, version in versions(other / "python").items()}
        constraints = None
        if pins:
            constraints = tmp / "constraints.txt"
            constraints.write_text("\n".join(sorted(f"{n}=={v}" for n, v in pins.items())) + "\n")
        _pip_install(site, layer, architecture, constraints)
        if constraints is not None:
            constraints.unlink()
        dropped = {canonical(name) for name in RUNTIME_PROVIDED} | pins.keys()
        for name, dist in distributions(site).items():
            if name in dropped:
                remove_distribution(site, name, dist)
        shutil.rmtree(site / "bin", ignore_errors=True)  # console scripts: useless in a layer
        remove_unused(site)
        progress("   compiling to bytecode for python" + PYTHON_VERSION)
        compile_bytecode_only(site)

    return build_once(layer_dir(layer.name, architecture), inputs, [layer.requirements.read_bytes()], build)
