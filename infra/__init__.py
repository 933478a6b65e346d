"""The CDK app of Hippocampus on AWS: config model, asset builds, constructs and the stack.

Importing `infra` (or `infra.config`) never imports aws_cdk: the local stack reads the
deployment defaults from `infra.config` without paying for jsii.
"""

import sys
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
CORE_PYTHON_DIR = REPO_ROOT / "layers" / "core" / "python"

# The domain package (routes, schema, models) is the single source of names the stack is built
# from; it lives in the core layer's folder, not in an installed distribution.
if str(CORE_PYTHON_DIR) not in sys.path:
    sys.path.insert(0, str(CORE_PYTHON_DIR))
