"""Everything the stack ships, built before the stack is constructed: `build_all` → `BuiltAssets`.

- The dependency layers (deps, xray, llm): `tools.layers`.
- The `core` layer: the project's package (`python/hippocampus`), copied without caches, keeping
  its sources beside unchecked-hash bytecode (tracebacks through our code stay readable).
- Each function's code: its folder under functions/, copied and compiled the same way.

Each build is skipped when its inputs are unchanged (`tools.cache`).

Run `python -m tools.assets [arm64|x86_64]` to build them and print the folders.
"""

from __future__ import annotations

import shutil
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from tools import REPO_ROOT, cache
from tools.bytecode import PYTHON_VERSION, compile_tree
from tools.cache import BUILDER_VERSION, IGNORED, AssetBuildError, build_once, hash_tree, progress
from tools.layers import REQUIREMENT_LAYERS, build_requirements_layer, layer_dir

CORE_PACKAGE_DIR: Final = REPO_ROOT / "layers" / "core" / "src" / "hippocampus"
FUNCTIONS_DIR: Final = REPO_ROOT / "functions"


@dataclass(frozen=True)
class BuiltAssets:
    """Folders to hand to `Code.from_asset`: layers by name, and function code by function name."""

    architecture: str
    layers: dict[str, Path]
    functions: dict[str, Path]


def build_source_layer(name: str, package_dir: Path) -> Path:
    """A layer holding one pure-Python package (`python/<package>`), compiled; architecture-free."""

    def build(tmp: Path) -> None:
        shutil.copytree(package_dir, tmp / "python" / package_dir.name, ignore=IGNORED)
        compile_tree(tmp / "python")

    inputs: dict[str, object] = {"builder": BUILDER_VERSION, "python_version": PYTHON_VERSION}
    return build_once(layer_dir(name), inputs, hash_tree(package_dir), build)


def build_function_code(name: str, functions_dir: Path = FUNCTIONS_DIR) -> Path:
    """A function's own folder, copied and compiled (its code asset)."""
    source = functions_dir / name
    if not (source / "handler.py").is_file():
        raise AssetBuildError(f"{source / 'handler.py'} is missing: every function needs a handler module")

    def build(tmp: Path) -> None:
        shutil.copytree(source, tmp, ignore=IGNORED)
        compile_tree(tmp)

    inputs: dict[str, object] = {"builder": BUILDER_VERSION, "python_version": PYTHON_VERSION}
    contents: list[bytes | str] = [str(source.resolve()), *hash_tree(source)]
    return build_once(cache.BUILD_DIR / "functions" / name, inputs, contents, build, lock=f"function-{name}")


def build_all(
    architecture: str, functions: Sequence[str], functions_dir: Path = FUNCTIONS_DIR
) -> BuiltAssets:
    """Every layer (for `architecture`) and the code of each of `functions`."""
    started = time.monotonic()
    progress(
        f"== Assets for {architecture}: {len(REQUIREMENT_LAYERS) + 1} layers and {len(functions)} functions' "
        "code, each rebuilt only when its inputs changed (a first build of the layers runs pip: it may take minutes)"
    )
    layers = {
        name: build_requirements_layer(layer, architecture) for name, layer in REQUIREMENT_LAYERS.items()
    }
    layers["core"] = build_source_layer("core", CORE_PACKAGE_DIR)
    built = BuiltAssets(
        architecture=architecture,
        layers=layers,
        functions={name: build_function_code(name, functions_dir) for name in functions},
    )
    progress(f"   assets ready in {time.monotonic() - started:.1f} s")
    return built


def main(argv: Sequence[str] | None = None) -> int:
    """Build for one architecture (default arm64) every function under functions/; print the folders."""
    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) > 1:
        print("usage: python -m tools.assets [arm64|x86_64]", file=sys.stderr)
        return 2
    functions = sorted(p.name for p in FUNCTIONS_DIR.iterdir() if (p / "handler.py").is_file())
    try:
        built = build_all(args[0] if args else "arm64", functions)
    except AssetBuildError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    for kind, folders in (("layer", built.layers), ("code", built.functions)):
        for name, path in folders.items():
            print(f"{kind:<6}{name:<12}{path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
