"""Write the server's OpenAPI document (what `src/api/schema.d.ts` is generated from).

    python scripts/openapi.py openapi.json

Built from a server with the default settings and a throwaway store, so the document is the
same on every machine; `make test` regenerates it and the types and fails when either drifts.
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path

from opsgym.server.app import create_app


def main(out: str) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        app = create_app(db=str(Path(tmp) / "openapi.sqlite"), runs_dir=str(Path(tmp) / "runs"))
        document = app.openapi()
    Path(out).write_text(json.dumps(document, indent=1, sort_keys=True) + "\n")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "openapi.json")
