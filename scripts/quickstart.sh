#!/usr/bin/env bash
# One command from a fresh clone: set up, start gnod, index a folder, run a query.
#   bash scripts/quickstart.sh [FOLDER] [QUERY]
# FOLDER defaults to this repo's docs/; QUERY to a question about them.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
folder=${1:-docs}
query=${2:-how are frames encoded on the socket}
G=.venv/bin/gnoctl
$G daemon start
name=$(basename "$(cd "$folder" && pwd)")
if $G collection list --json | grep -q "\"name\": \"$name\""; then
  $G update "$name"
else
  # docs/schemas/ is generated JSON: not what the demo query is about.
  $G collection add "$folder" --exclude 'schemas/'
fi
echo "--- gnoctl search \"$query\""
$G search "$query" -n 5 --md
# Hybrid search: without downloaded models (gnoctl models pull) it says what it skipped.
echo "--- gnoctl query \"$query\""
$G query "$query" -n 3
$G status
