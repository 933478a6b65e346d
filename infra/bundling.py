"""What the functions ship, built by CDK's local bundling (no Docker) and cached by CDK's asset hash.

Each layer and each function's code is `Code.from_asset(<source folder>, bundling=...)`. CDK hashes
the source folder (caches excluded) together with the bundling options, whose `environment` holds
the build's other inputs (`build_inputs`: platform, Python version, uv's version, the build steps'
own source, the requirements a layer is resolved against), and bundles only when
`<outdir>/asset.<hash>` does not exist yet. Bundling runs `LocalBuild`, the matching step of
`tools.assets`, in this process; it never returns False, so the Docker image is never pulled.

A synth into another folder than `cdk.out` (the tests', `cdk deploy --output ...`) reuses what
`cdk.out` holds for the same hash, as hard links, and leaves there what it built: a layer is
installed once per change of its inputs, not once per synth (docs/operations.md "Synthesize").
"""

from __future__ import annotations

import functools
import hashlib
import os
import re
import shutil
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Final

import aws_cdk as cdk
import jsii
from aws_cdk import aws_lambda as lambda_

from infra.specs import FUNCTION_NAMES
from tools import REPO_ROOT, assets
from tools.assets import (
    CORE_PACKAGE_DIR,
    FUNCTIONS_DIR,
    IGNORED_PATTERNS,
    MERGED_LAYERS,
    PYTHON_PLATFORMS,
    PYTHON_VERSION,
    REQUIREMENT_LAYERS,
    LayerSource,
    progress,
)

# Where `make synth` writes, and where a synth into another folder looks for assets built before.
SHARED_OUTDIR: Final = REPO_ROOT / "cdk.out"
# Required by BundlingOptions, used only if local bundling declined (it never does).
BUNDLING_IMAGE: Final = cdk.DockerImage.from_registry("public.ecr.aws/sam/build-python3.13")
# The folder CDK hands a bundler: `<outdir>/asset.<hash>-building`, renamed to `asset.<hash>` after.
_BUNDLING_DIR: Final = re.compile(r"(asset\.[0-9a-f]{64})-building")


def _digest(*files: Path) -> str:
    hasher = hashlib.sha256()
    for file in files:
        hasher.update(file.read_bytes())
    return hasher.hexdigest()[:16]


def build_inputs(architecture: str | None = None) -> dict[str, str]:
    """What a build depends on besides its source folder: part of the asset hash, so a change rebuilds."""
    inputs = {"PYTHON_VERSION": PYTHON_VERSION, "BUILD_STEPS": _digest(Path(assets.__file__))}
    if architecture is not None:
        inputs |= {"PYTHON_PLATFORM": PYTHON_PLATFORMS[architecture], "UV_VERSION": metadata.version("uv")}
    return inputs


def _layer_inputs(layer: LayerSource) -> dict[str, str]:
    """A dependency layer's own inputs besides its folder: what it is resolved against, and the files
    taken from its model's wheel (named in the adapter that reads them)."""
    inputs = {
        f"RESOLVED_WITH_{name.upper()}": _digest(REQUIREMENT_LAYERS[name].requirements)
        for name in layer.excludes
    }
    if layer.model is not None:
        inputs["MODEL_FILES"] = ",".join(layer.model.files)
    return inputs


def _link_tree(source: Path, destination: Path) -> None:
    """`destination` holds what `source` holds, as hard links (copies across file systems)."""

    def link(src: str, dst: str) -> None:
        try:
            os.link(src, dst)
        except OSError:
            shutil.copy2(src, dst)

    shutil.copytree(source, destination, copy_function=link, symlinks=True, dirs_exist_ok=True)


@jsii.implements(cdk.ILocalBundling)
class LocalBuild:
    """Runs one build step of `tools.assets` into the folder CDK bundles into, saying what it does."""

    def __init__(self, label: str, build: Callable[[Path], None], shared_outdir: Path | None) -> None:
        self.label = label
        self._build = build
        self._shared_outdir = shared_outdir

    # jsii passes the options as one struct; the build needs none of them (its inputs are bound).
    def try_bundle(self, output_dir: str, options: cdk.BundlingOptions | None = None, **_: object) -> bool:
        output = Path(output_dir)
        shared = self._shared_copy(output)
        if shared is not None and shared.is_dir():
            _link_tree(shared, output)
            progress(f"   {self.label}: reused {shared.relative_to(shared.parent.parent)}")
            return True
        started = time.monotonic()
        self._build(output)
        progress(f"   built {self.label} in {time.monotonic() - started:.1f} s")
        if shared is not None:
            self._publish(output, shared)
        return True

    def _shared_copy(self, output: Path) -> Path | None:
        """The same asset (same hash) in the shared outdir, unless this synth writes there itself."""
        match = _BUNDLING_DIR.fullmatch(output.name)
        if self._shared_outdir is None or match is None or output.parent == self._shared_outdir:
            return None
        return self._shared_outdir / match.group(1)

    @staticmethod
    def _publish(output: Path, shared: Path) -> None:
        """Leave a copy in the shared outdir for the next synth; atomic, so a parallel one never sees half."""
        scratch = shared.with_name(f"{shared.name}-{os.getpid()}-publishing")
        shutil.rmtree(scratch, ignore_errors=True)
        _link_tree(output, scratch)
        try:
            scratch.rename(shared)
        except OSError:  # another synth published the same asset first
            shutil.rmtree(scratch, ignore_errors=True)


@dataclass(frozen=True)
class AssetSource:
    """One asset: its source folder (hashed by CDK) and how it is built."""

    source: Path
    bundling: cdk.BundlingOptions

    def code(self) -> lambda_.AssetCode:
        return lambda_.Code.from_asset(
            str(self.source), bundling=self.bundling, exclude=list(IGNORED_PATTERNS)
        )

    def stage(self, scope: cdk.Stack, construct_id: str) -> Path:
        """Staged as `code()` would be (the same hash, hence the same folder), without a function."""
        staging = cdk.AssetStaging(
            scope,
            construct_id,
            source_path=str(self.source),
            bundling=self.bundling,
            exclude=list(IGNORED_PATTERNS),
        )
        return Path(staging.absolute_staged_path)


@dataclass(frozen=True)
class LambdaAssets:
    """The layers (by name) and the functions' code (by function name) for one architecture."""

    architecture: str
    functions_dir: Path = FUNCTIONS_DIR
    shared_outdir: Path | None = SHARED_OUTDIR

    @property
    def layers(self) -> dict[str, Path]:
        """Layer name → its source folder (a merged layer's: its first part's)."""
        sources = {name: layer.requirements.parent for name, layer in REQUIREMENT_LAYERS.items()}
        sources |= {name: layer.parts[0].requirements.parent for name, layer in MERGED_LAYERS.items()}
        return sources | {"core": CORE_PACKAGE_DIR}

    @property
    def functions(self) -> dict[str, Path]:
        """Function name → its source folder."""
        return {name: self.functions_dir / name for name in FUNCTION_NAMES}

    def layer_code(self, name: str) -> lambda_.AssetCode:
        return self._layer(name).code()

    def function_code(self, name: str) -> lambda_.AssetCode:
        return self._function(name).code()

    def stage(self, outdir: Path, keys: Iterable[str] | None = None) -> dict[str, Path]:
        """Bundle assets into `outdir` without a stack (tests, benchmarks): the folder of each, as
        `layer:<name>` and `code:<function>` (all of them, or `keys`), the very folders a synth stages."""
        scope = cdk.Stack(cdk.App(outdir=str(outdir)), "Assets")
        sources = {f"layer:{name}": functools.partial(self._layer, name) for name in self.layers}
        sources |= {f"code:{name}": functools.partial(self._function, name) for name in self.functions}
        return {key: sources[key]().stage(scope, key) for key in (sources if keys is None else keys)}

    def _layer(self, name: str) -> AssetSource:
        if name == "core":
            build = functools.partial(assets.build_package_layer, CORE_PACKAGE_DIR)
            return self._asset("layer core", CORE_PACKAGE_DIR, build_inputs(), build)
        label = f"layer {name} ({self.architecture})"
        if name in MERGED_LAYERS:
            merged = MERGED_LAYERS[name]
            build = functools.partial(assets.build_merged_layer, merged, self.architecture)
            inputs = build_inputs(self.architecture)
            for part in merged.parts:  # CDK hashes the first part's folder: every part's files are inputs
                folder = part.requirements.parent
                inputs[f"PART_{part.name.upper()}"] = _digest(
                    *sorted(p for p in folder.iterdir() if p.is_file())
                )
                inputs |= {f"{part.name.upper()}_{key}": value for key, value in _layer_inputs(part).items()}
            return self._asset(label, merged.parts[0].requirements.parent, inputs, build)
        layer = REQUIREMENT_LAYERS[name]
        build = functools.partial(assets.build_requirements_layer, layer, self.architecture)
        inputs = build_inputs(self.architecture) | _layer_inputs(layer)
        return self._asset(label, layer.requirements.parent, inputs, build)

    def _function(self, name: str) -> AssetSource:
        source = self.functions_dir / name
        build = functools.partial(assets.build_function_code, source)
        return self._asset(f"code of {name}", source, build_inputs(), build)

    def _asset(
        self, label: str, source: Path, inputs: Mapping[str, str], build: Callable[[Path], None]
    ) -> AssetSource:
        local = LocalBuild(label, build, self.shared_outdir)
        bundling = cdk.BundlingOptions(image=BUNDLING_IMAGE, environment=dict(inputs), local=local)
        return AssetSource(source, bundling)
