"""Where things are: the repository, and the core layer that Lambda would mount under /opt/python."""

import sys
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
CORE_LAYER = REPO_ROOT / "layers" / "core" / "python"
FUNCTIONS_DIR = REPO_ROOT / "functions"


def ensure_importable() -> None:
    """Make `hippocampus` (the core layer) and `infra` importable, as `make dev` runs from a checkout."""
    for path in (CORE_LAYER, REPO_ROOT):
        if str(path) not in sys.path:
            sys.path.insert(0, str(path))
