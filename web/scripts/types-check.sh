#!/usr/bin/env bash
# The generated API types must match the server: regenerate openapi.json and schema.d.ts into a
# temporary folder and compare with the committed ones.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-../.venv/bin/python}
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
"$PYTHON" scripts/openapi.py "$tmp/openapi.json"
npx --no-install openapi-typescript "$tmp/openapi.json" -o "$tmp/schema.d.ts" >/dev/null 2>&1
if ! cmp -s "$tmp/openapi.json" openapi.json || ! cmp -s "$tmp/schema.d.ts" src/api/schema.d.ts; then
    echo "web: the API types drifted from the server's OpenAPI: run 'make web-types' and commit web/openapi.json and web/src/api/schema.d.ts" >&2
    diff <(head -c 20000 openapi.json) <(head -c 20000 "$tmp/openapi.json") | head -20 >&2 || true
    exit 1
fi
echo "web: API types match the server's OpenAPI"
