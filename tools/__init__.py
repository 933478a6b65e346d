"""Build tools of the deployment: what the CDK app ships, built before the stack is constructed.

Docker-free builds of the Lambda layers and function code (docs/operations.md "Synthesize", "What the
layers hold"):

- `tools.layers`: the pip-installed dependency layers (deps, xray, llm) for the Lambda platform.
- `tools.bytecode`: compiling for the runtime's Python; third-party code as bytecode only.
- `tools.cache`: input-hash stamps (skip an unchanged build) and file locks (parallel builders).
- `tools.assets`: everything the stack ships, as `BuiltAssets` (`build_all`).
- `tools.synth_summary`: what `make synth` prints about the synthesized stack.
- `tools.openapi`: writes the API's OpenAPI document to `docs/openapi.json` (`make openapi`).

No module of this package imports aws_cdk: the benchmark and the local stack may use them.
"""

from pathlib import Path
from typing import Final

REPO_ROOT: Final = Path(__file__).resolve().parent.parent
