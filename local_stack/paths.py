"""Where things are: in the repository, on the network, and in the local stack's AWS."""

from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
FUNCTIONS_DIR = REPO_ROOT / "functions"
# The local stack's state between restarts (docs/operations.md "Local stack"); git ignores it.
DEFAULT_DATA_DIR = REPO_ROOT / ".local-stack"
# This value of MEMORY_LOCAL_DATA_DIR (or --data-dir) keeps the state in memory, as --in-memory does.
IN_MEMORY = ":memory:"

# Everything listens on loopback only: the local stack has no authentication.
LOOPBACK = "127.0.0.1"
# moto's default account, in every local ARN, and the local region (unless Bedrock needs another).
ACCOUNT_ID = "123456789012"
DEFAULT_REGION = "us-east-1"
