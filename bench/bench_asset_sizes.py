"""Deployment size of each function: its code plus its layers, unzipped and zipped.

Builds (or reuses, from cdk.out) exactly what `make synth` ships: the layers and code CDK bundles
(`infra.bundling.LambdaAssets`) for the architecture and the layers of the deployment in cdk.json. Lambda's limit is 250 MB unzipped for a function and its layers; the
project's target is get_memory <= 10 MB unzipped (cold start of the read path).

Run: .venv/bin/python -m bench.bench_asset_sizes   (or `make bench`)
"""

from __future__ import annotations

import io
import tempfile
import zipfile
from pathlib import Path

from infra.bundling import LambdaAssets
from infra.config import config_from_cdk_json
from infra.specs import FUNCTION_SPECS

MB = 1024 * 1024
TARGET_FUNCTION = "get_memory"
TARGET_UNZIPPED_MB = 10.0
LAMBDA_UNZIPPED_LIMIT_MB = 250.0


def unzipped_size(root: Path) -> int:
    return sum(p.stat().st_size for p in root.rglob("*") if p.is_file())


def zipped_size(root: Path) -> int:
    """Size of the zip CDK would upload (deflate, every file under the asset folder)."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for path in sorted(p for p in root.rglob("*") if p.is_file()):
            archive.write(path, path.relative_to(root))
    return buffer.getbuffer().nbytes


def main() -> int:
    config = config_from_cdk_json()
    with tempfile.TemporaryDirectory() as outdir:
        assets = LambdaAssets(config.architecture).stage(Path(outdir))
        sizes = {key: (unzipped_size(path), zipped_size(path)) for key, path in assets.items()}
    layers = {spec.name: spec.layers_for(config) for spec in FUNCTION_SPECS}
    return report(config.architecture, sizes, layers)


def report(architecture: str, sizes: dict[str, tuple[int, int]], layers: dict[str, tuple[str, ...]]) -> int:
    """`sizes`: (unzipped, zipped) bytes by `code:<function>` / `layer:<name>`; `layers`: each
    function's layers in the cdk.json deployment (the embedding provider adds one to some)."""
    print(
        f"architecture {architecture}, python3.13, unchecked-hash .pyc: dependency layers "
        "bytecode only, core layer and function code with their sources\n"
    )
    print(f"{'asset':<18}{'unzipped MB':>14}{'zipped MB':>12}")
    for key, (raw, packed) in sizes.items():
        print(f"{key:<18}{raw / MB:>14.2f}{packed / MB:>12.2f}")

    print(f"\n{'function':<12}{'layers':<31}{'unzipped MB':>14}{'zipped MB':>12}")
    totals: dict[str, int] = {}
    for name, function_layers in layers.items():
        keys = [f"code:{name}"] + [f"layer:{layer}" for layer in function_layers]
        raw = sum(sizes[key][0] for key in keys)
        packed = sum(sizes[key][1] for key in keys)
        totals[name] = raw
        print(f"{name:<12}{'+'.join(function_layers):<31}{raw / MB:>14.2f}{packed / MB:>12.2f}")

    target = totals[TARGET_FUNCTION] / MB
    verdict = "met" if target <= TARGET_UNZIPPED_MB else "NOT met"
    print(f"\ntarget {TARGET_FUNCTION} <= {TARGET_UNZIPPED_MB:g} MB unzipped: {target:.2f} MB -> {verdict}")
    largest = max(totals.values()) / MB
    print(
        f"Lambda limit {LAMBDA_UNZIPPED_LIMIT_MB:g} MB unzipped (function + layers): largest {largest:.2f} MB"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
