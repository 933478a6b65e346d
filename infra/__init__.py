"""The CDK app of Hippocampus on AWS: config model, constructs and the stack.

Importing `infra` (or `infra.config`) never imports aws_cdk: the local stack reads the
deployment defaults from `infra.config` without paying for jsii. The domain package
(`hippocampus`, installed from layers/core) is the single source of the names the stack is
built from.
"""

from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
