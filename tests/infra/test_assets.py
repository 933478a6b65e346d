"""Layer and code builds without Docker: contents, bytecode, and the skip-when-unchanged stamp."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from infra import assets

RUNTIME_SHIPPED = {"boto3", "botocore", "s3transfer"}


def dists(layer: Path) -> set[str]:
    return set(assets._dist_infos(layer / "python"))


@pytest.fixture(scope="module")
def layers() -> dict[str, Path]:
    return {
        "deps": assets.build_requirements_layer(assets.DEPS_LAYER, "arm64"),
        "llm": assets.build_requirements_layer(assets.LLM_LAYER, "arm64"),
        "core": assets.build_source_layer("core", assets.CORE_PACKAGE_DIR),
    }


def test_runtime_shipped_packages_are_dropped(layers: dict[str, Path]) -> None:
    for name, layer in layers.items():
        site = layer / "python"
        assert not RUNTIME_SHIPPED & dists(layer), name
        assert not [p for p in RUNTIME_SHIPPED if (site / p).exists()], name
        assert not (site / "bin").exists()


def test_deps_layer_has_the_runtime_dependencies(layers: dict[str, Path]) -> None:
    expected = {
        "aws-lambda-powertools",
        "pydantic",
        "pydantic-core",
        "pydantic-settings",
        "opentelemetry-api",
        "opentelemetry-propagator-aws-xray",
        "aws-xray-sdk",
        "jmespath",  # powertools needs it; the runtime ships it too, but only for boto3
    }
    assert expected <= dists(layers["deps"])
    assert "openai" not in dists(layers["deps"])


def test_llm_layer_holds_openai_and_nothing_of_deps(layers: dict[str, Path]) -> None:
    llm, deps = dists(layers["llm"]), dists(layers["deps"])
    assert "openai" in llm
    assert not llm & deps, "the two layers would overlap in /opt/python"


def test_pyc_for_the_runtime_python(layers: dict[str, Path]) -> None:
    for name, layer in layers.items():
        pycs = list(layer.rglob("*.pyc"))
        assert pycs, name
        assert {p.name.rsplit(".", 2)[-2] for p in pycs} == {"cpython-313"}, name
        # unchecked-hash: flags word 0b01 (PEP 552); a timestamp pyc would be 0.
        assert {int.from_bytes(p.read_bytes()[4:8], "little") for p in pycs} == {1}, name
        sources = [p for p in (layer / "python").rglob("*.py") if "__pycache__" not in p.parts]
        compiled = {p.parent.parent / (p.name.split(".")[0] + ".py") for p in pycs}
        assert set(sources) <= compiled, name


def test_core_layer_is_the_package_without_caches(layers: dict[str, Path]) -> None:
    core = layers["core"] / "python" / "hippocampus"
    shipped = {p.relative_to(core) for p in core.rglob("*.py")}
    source = {p.relative_to(assets.CORE_PACKAGE_DIR) for p in assets.CORE_PACKAGE_DIR.rglob("*.py")}
    assert shipped == source


def test_unchanged_inputs_skip_the_build(layers: dict[str, Path]) -> None:
    stamp = layers["deps"].with_name(layers["deps"].name + ".stamp.json")
    before = stamp.stat().st_mtime_ns
    started = time.monotonic()
    assert assets.build_requirements_layer(assets.DEPS_LAYER, "arm64") == layers["deps"]
    assert time.monotonic() - started < 2
    assert stamp.stat().st_mtime_ns == before


def test_source_change_rebuilds(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(assets, "BUILD_DIR", tmp_path / "build")
    package = tmp_path / "src" / "probe"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("VALUE = 1\n")
    first = assets.build_source_layer("probe", package)
    pyc = first / "python" / "probe" / "__pycache__" / "__init__.cpython-313.pyc"
    original = pyc.read_bytes()
    assert assets.build_source_layer("probe", package) == first
    assert pyc.read_bytes() == original
    (package / "__init__.py").write_text("VALUE = 2\n")
    assets.build_source_layer("probe", package)
    assert pyc.read_bytes() != original
    (package / "__pycache__").mkdir()
    (package / "__pycache__" / "stale.cpython-313.pyc").write_bytes(b"junk")
    rebuilt = assets.build_source_layer("probe", package)
    assert not (rebuilt / "python" / "probe" / "__pycache__" / "stale.cpython-313.pyc").exists()


def test_function_without_handler_is_an_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(assets, "BUILD_DIR", tmp_path / "build")
    (tmp_path / "functions" / "get_memory").mkdir(parents=True)
    with pytest.raises(assets.AssetBuildError, match=r"get_memory/handler\.py is missing"):
        assets.build_function_code("get_memory", tmp_path / "functions")


def test_function_code_is_compiled(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(assets, "BUILD_DIR", tmp_path / "build")
    source = tmp_path / "functions" / "ingest"
    source.mkdir(parents=True)
    (source / "handler.py").write_text("def lambda_handler(event, context):\n    return {}\n")
    built = assets.build_function_code("ingest", tmp_path / "functions")
    assert (built / "handler.py").is_file()
    assert (built / "__pycache__" / "handler.cpython-313.pyc").is_file()
