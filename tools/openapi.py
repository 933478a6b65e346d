"""Write the API's OpenAPI 3.1 document, as `GET /v1/openapi.json` serves it, to a file.

`make openapi` keeps `docs/openapi.json` up to date, for client generators that read a file
(docs/api.md); a test fails while the file differs from the served document:

    .venv/bin/python -m tools.openapi docs/openapi.json
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from hippocampus.api.openapi import openapi_document


def render(document: dict[str, Any]) -> str:
    """Sorted keys, two-space indents, a final newline: a stable file, with readable diffs."""
    return json.dumps(document, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("output", type=Path, help="the file to write, e.g. docs/openapi.json")
    output = parser.parse_args(argv).output
    output.write_text(render(openapi_document()), encoding="utf-8")
    print(f"wrote {output}")


if __name__ == "__main__":
    main()
