#!/usr/bin/env bash
# MCP conformance (server scenarios of @modelcontextprotocol/conformance 0.1.13) against a real
# Sightline on a temp database. Not part of `npm test`. See scripts/mcp-conformance.ts.
#   scripts/mcp-conformance.sh [scenario ...]
set -euo pipefail
cd "$(dirname "$0")/.."
exec npx tsx scripts/mcp-conformance.ts "$@"
