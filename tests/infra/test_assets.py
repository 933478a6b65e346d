"""Layer and code builds without Docker: contents, bytecode, and CDK's asset hash as the cache."""

from __future__ import annotations

import importlib.util
import marshal
import re
import types
from collections.abc import Callable
from pathlib import Path

import aws_cdk as cdk
import aws_lambda_powertools
import pytest

from infra.bundling import LambdaAssets
from tools import REPO_ROOT
from tools.assets import (
    CORE_PACKAGE_DIR,
    FUNCTIONS_DIR,
    KEEP_SOURCES,
    LAYER_MOUNT,
    UNUSED_FILES,
    UNUSED_POWERTOOLS_UTILITIES,
    versions,
)

RUNTIME_SHIPPED = {"boto3", "botocore", "s3transfer"}


def dists(layer: Path) -> set[str]:
    """The distributions a layer holds, as importlib.metadata finds them in its python/ folder."""
    return set(versions(layer / "python"))


@pytest.fixture(scope="module")
def layers(staged_assets: Callable[[str], dict[str, Path]]) -> dict[str, Path]:
    staged = staged_assets("arm64")
    return {name: staged[f"layer:{name}"] for name in (*REQUIREMENT_LAYERS, "core")}


# The dependency layers, and the one merged from two of them (tools/assets.py MERGED_LAYERS).
REQUIREMENT_LAYERS = ("deps", "xray", "llm", "embeddings", "pii", "embeddings-pii")


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
        "opentelemetry-api",
        "opentelemetry-propagator-aws-xray",
        "jmespath",  # powertools needs it; the runtime ships it too, but only for boto3
    }
    assert expected <= dists(layers["deps"])
    assert not {"openai", "aws-xray-sdk", "wrapt", "pydantic-settings"} & dists(layers["deps"])


def test_xray_layer_holds_the_sdk_and_nothing_of_deps(layers: dict[str, Path]) -> None:
    xray, deps = dists(layers["xray"]), dists(layers["deps"])
    assert {"aws-xray-sdk", "wrapt"} <= xray
    assert not xray & deps, "the two layers would overlap in /opt/python"


def test_llm_layer_holds_openai_and_nothing_of_deps(layers: dict[str, Path]) -> None:
    llm, deps = dists(layers["llm"]), dists(layers["deps"])
    assert "openai" in llm
    assert not llm & deps, "the two layers would overlap in /opt/python"
    assert not llm & dists(layers["xray"]), "the condenser carries both"


def test_embeddings_layer_holds_the_tokenizer_and_the_model_files_only(layers: dict[str, Path]) -> None:
    site = layers["embeddings"] / "python"
    assert dists(layers["embeddings"]) == {
        "tokenizers"
    }  # no huggingface-hub: the tokenizer is read from a file
    model = sorted(str(path.relative_to(site)) for path in (site / "wordllama").rglob("*") if path.is_file())
    assert model == [
        "wordllama/tokenizers/l2_supercat_tokenizer_config.json",
        "wordllama/weights/l2_supercat_256.safetensors",
    ]


def test_pii_layer_holds_the_pattern_detectors_libraries_only(layers: dict[str, Path]) -> None:
    assert dists(layers["pii"]) == {"phonenumberslite", "python-stdnum"}  # neither has a dependency
    site = layers["pii"] / "python"
    # Bytecode only, with the data files python-stdnum reads at run time (the IBAN registry).
    assert (site / "phonenumbers" / "__init__.pyc").is_file()
    assert (site / "stdnum" / "iban.pyc").is_file() and (site / "stdnum" / "iban.dat").is_file()


def test_merged_layer_is_its_parts_side_by_side(layers: dict[str, Path]) -> None:
    """embeddings-pii: for a function with no room for both layers (Lambda allows five)."""
    merged = dists(layers["embeddings-pii"])
    assert merged == dists(layers["embeddings"]) | dists(layers["pii"])
    for part in ("embeddings", "pii"):
        site = layers[part] / "python"
        files = {p.relative_to(site) for p in site.rglob("*") if p.is_file()}
        merged_site = layers["embeddings-pii"] / "python"
        assert files <= {p.relative_to(merged_site) for p in merged_site.rglob("*") if p.is_file()}, part


def code_of(pyc: Path) -> types.CodeType:
    """The module's code object (after the 16-byte PEP 552 header)."""
    code = marshal.loads(pyc.read_bytes()[16:])  # noqa: S302 - bytecode this build compiled itself
    assert isinstance(code, types.CodeType)
    return code


def kept_sources(site: Path) -> list[Path]:
    return [site / name for name in KEEP_SOURCES if (site / name).exists()]


def is_kept(path: Path, site: Path) -> bool:
    return any(root == path or root in path.parents for root in kept_sources(site))


def test_dependency_layers_ship_bytecode_only(layers: dict[str, Path]) -> None:
    """Legacy .pyc for Python 3.13 beside where each .py was, hash-based, recording /opt/python paths."""
    for name in REQUIREMENT_LAYERS:
        site = layers[name] / "python"
        sources = [p for p in site.rglob("*.py") if not is_kept(p, site)]
        assert sources == [], name
        pycs = [p for p in site.rglob("*.pyc") if not is_kept(p, site)]
        assert pycs and not [p for p in pycs if "__pycache__" in p.parts], name
        for pyc in pycs:
            data = pyc.read_bytes()
            assert data[:4] == importlib.util.MAGIC_NUMBER, pyc
            # unchecked-hash: flags word 0b01 (PEP 552); a timestamp pyc would be 0.
            assert int.from_bytes(data[4:8], "little") == 1, pyc
        sample = pycs[0]
        assert code_of(sample).co_filename == f"{LAYER_MOUNT}/{sample.relative_to(site).with_suffix('.py')}"


def test_kept_sources_keep_the_usual_layout(layers: dict[str, Path]) -> None:
    """anyio reads its own source at import (its lazy importer): source and __pycache__ bytecode."""
    site = layers["llm"] / "python"
    assert kept_sources(site) == [site / "anyio"]
    assert (site / "anyio" / "__init__.py").is_file()
    assert (site / "anyio" / "__pycache__" / "__init__.cpython-313.pyc").is_file()
    assert not (site / "anyio" / "__init__.pyc").exists()
    for reason in KEEP_SOURCES.values():
        assert len(reason) >= 60


def test_pyc_for_the_runtime_python_beside_core_sources(layers: dict[str, Path]) -> None:
    """The project's own package keeps its sources, with unchecked-hash bytecode in __pycache__."""
    layer = layers["core"]
    pycs = list(layer.rglob("*.pyc"))
    assert pycs
    assert {p.name.rsplit(".", 2)[-2] for p in pycs} == {"cpython-313"}
    assert {int.from_bytes(p.read_bytes()[4:8], "little") for p in pycs} == {1}
    sources = [p for p in (layer / "python").rglob("*.py") if "__pycache__" not in p.parts]
    compiled = {p.parent.parent / (p.name.split(".")[0] + ".py") for p in pycs}
    assert set(sources) <= compiled


def test_core_layer_is_the_package_without_caches(layers: dict[str, Path]) -> None:
    core = layers["core"] / "python" / "hippocampus"
    shipped = {p.relative_to(core) for p in core.rglob("*.py")}
    source = {p.relative_to(CORE_PACKAGE_DIR) for p in CORE_PACKAGE_DIR.rglob("*.py")}
    assert shipped == source


def test_unused_files_are_stripped(layers: dict[str, Path]) -> None:
    for unused in UNUSED_FILES:
        assert len(unused.reason) >= 40, unused.pattern
        compiled = re.sub(r"\.py$", ".pyc", unused.pattern)
        for name in REQUIREMENT_LAYERS:
            site = layers[name] / "python"
            assert not list(site.glob(unused.pattern)) and not list(site.glob(compiled)), (name, unused)
    swagger = layers["deps"] / "python" / "aws_lambda_powertools" / "event_handler" / "openapi" / "swagger_ui"
    assert not list(swagger.glob("*.js")) and not list(swagger.glob("*.css"))
    assert (swagger / "__init__.pyc").is_file()  # the modules stay: imports are unchanged
    assert not (layers["xray"] / "python" / "wrapt-stubs").exists()


def test_stripped_powertools_utilities_are_imported_by_nothing_that_ships() -> None:
    """What UNUSED_POWERTOOLS_UTILITIES removes: no module of the project or of Powertools that stays
    imports it (the JSON-schema middleware, its one importer, goes too)."""
    powertools = Path(aws_lambda_powertools.__file__).parent
    stripped = [powertools / "utilities" / name for name in UNUSED_POWERTOOLS_UTILITIES]
    stripped.append(powertools / "event_handler" / "middlewares" / "schema_validation.py")
    kept = [
        path
        for path in [*powertools.rglob("*.py"), *CORE_PACKAGE_DIR.rglob("*.py"), *FUNCTIONS_DIR.rglob("*.py")]
        if not any(path == gone or gone in path.parents for gone in stripped)
    ]
    for name in UNUSED_POWERTOOLS_UTILITIES:
        pattern = re.compile(rf"utilities(\.|\s+import\s+){name}\b|from \.{{1,2}}{name} import")
        users = [path for path in kept if pattern.search(path.read_text(encoding="utf-8"))]
        assert not users, (name, users)


def test_swagger_ui_is_never_enabled() -> None:
    """Its assets are stripped from the deps layer: only the route enable_swagger() adds reads them."""
    for path in [*CORE_PACKAGE_DIR.rglob("*.py"), *FUNCTIONS_DIR.rglob("*.py")]:
        assert "enable_swagger" not in path.read_text(encoding="utf-8"), path.relative_to(REPO_ROOT)


# Calls that read a module's source (or lines of it) at run time, and the bytecode-only modules
# reviewed to make them anyway without harm.
SOURCE_READERS = {"getsource", "getsourcelines", "findsource", "getsourcefile", "get_source", "getlines"}
REVIEWED_SOURCE_READERS = {
    # Only with `use_attribute_docstrings=True`, on the model class's own source (our models keep
    # theirs); an OSError (no source) means "no attribute docstrings".
    "pydantic/_internal/_docs_extraction.pyc",
    # `get_source = get_code`: six's meta path importer implementing the loader protocol.
    "six.pyc",
}


def _names(code: types.CodeType) -> set[str]:
    found = set(code.co_names)
    for constant in code.co_consts:
        if isinstance(constant, types.CodeType):
            found |= _names(constant)
    return found


def test_no_bytecode_only_module_needs_its_source(layers: dict[str, Path]) -> None:
    """A new dependency that reads its own source must go to KEEP_SOURCES (or be reviewed here)."""
    offenders = set()
    for name in REQUIREMENT_LAYERS:
        site = layers[name] / "python"
        for pyc in site.rglob("*.pyc"):
            if "__pycache__" in pyc.parts:
                continue
            if _names(code_of(pyc)) & SOURCE_READERS:
                offenders.add(str(pyc.relative_to(site)))
    assert offenders == REVIEWED_SOURCE_READERS


def probe_function(functions_dir: Path, source: str = "VALUE = 1\n") -> Path:
    folder = functions_dir / "ingest"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "handler.py").write_text(source + "def lambda_handler(event, context):\n    return {}\n")
    return folder


def stage_probe(functions_dir: Path, outdir: Path, shared_outdir: Path | None = None) -> Path:
    """The probe function's code, staged into `outdir` as a synth there would stage it."""
    assets = LambdaAssets("arm64", functions_dir=functions_dir, shared_outdir=shared_outdir)
    return assets.stage(outdir, ["code:ingest"])["code:ingest"]


def test_function_code_is_compiled(tmp_path: Path) -> None:
    probe_function(tmp_path / "functions")
    built = stage_probe(tmp_path / "functions", tmp_path / "cdk.out")
    assert (built / "handler.py").is_file()
    assert (built / "__pycache__" / "handler.cpython-313.pyc").is_file()


def test_unchanged_sources_reuse_the_staged_asset(tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    probe = probe_function(tmp_path / "functions")
    first = stage_probe(tmp_path / "functions", tmp_path / "cdk.out")
    capfd.readouterr()
    pyc = first / "__pycache__" / "handler.cpython-313.pyc"
    built_at = pyc.stat().st_mtime_ns
    # Caches in the source folder are not part of its hash, and are never shipped.
    (probe / "__pycache__").mkdir(exist_ok=True)
    (probe / "__pycache__" / "stale.cpython-313.pyc").write_bytes(b"junk")
    assert stage_probe(tmp_path / "functions", tmp_path / "cdk.out") == first
    assert pyc.stat().st_mtime_ns == built_at
    assert "Bundling" not in capfd.readouterr().err
    assert not (first / "__pycache__" / "stale.cpython-313.pyc").exists()


def test_a_source_change_builds_a_new_asset(tmp_path: Path) -> None:
    probe_function(tmp_path / "functions")
    first = stage_probe(tmp_path / "functions", tmp_path / "cdk.out")
    probe_function(tmp_path / "functions", "VALUE = 2\n")
    cdk.AssetStaging.clear_asset_hash_cache()  # as a new synth starts: CDK caches hashes per process
    second = stage_probe(tmp_path / "functions", tmp_path / "cdk.out")
    assert second != first
    pycs = [folder / "__pycache__" / "handler.cpython-313.pyc" for folder in (first, second)]
    assert pycs[0].read_bytes() != pycs[1].read_bytes()


def test_a_synth_elsewhere_reuses_what_the_shared_outdir_holds(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    """The tests synthesize into temporary folders: each builds an asset once, not once per folder."""
    probe_function(tmp_path / "functions")
    shared = tmp_path / "shared-cdk.out"
    first = stage_probe(tmp_path / "functions", tmp_path / "one", shared)
    assert "built code of ingest" in capfd.readouterr().err
    assert (shared / first.name / "handler.py").is_file()  # left there for the next synth
    second = stage_probe(tmp_path / "functions", tmp_path / "two", shared)
    assert "reused" in capfd.readouterr().err
    assert second.name == first.name
    assert (second / "__pycache__" / "handler.cpython-313.pyc").is_file()


def test_function_without_handler_is_an_error(tmp_path: Path) -> None:
    (tmp_path / "functions" / "ingest").mkdir(parents=True)
    with pytest.raises(RuntimeError, match=r"ingest/handler\.py is missing"):
        stage_probe(tmp_path / "functions", tmp_path / "cdk.out")
