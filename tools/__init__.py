"""Tools of the deployment and the operator, none of which imports aws_cdk (the benchmarks and the
local stack may use them):

- `tools.assets`: the build steps of the layers and the functions' code, which CDK's local bundling
  runs (`infra.bundling`; docs/operations.md "Synthesize", "What the layers hold").
- `tools.synth_summary`: what `make synth` prints about the synthesized stack.
- `tools.openapi`: writes the API's OpenAPI document to `docs/openapi.json` (`make openapi`).
- `tools.reindex`: re-embeds a tenant's facts and episodes (docs/operations.md).
"""

from pathlib import Path
from typing import Final

REPO_ROOT: Final = Path(__file__).resolve().parent.parent
