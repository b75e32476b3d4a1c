#!/usr/bin/env bash
# One command from a fresh clone: set up, start gnod, index, search.
#   bash scripts/quickstart.sh [FOLDER] [QUERY]
# Without FOLDER it indexes this repository's README, docs and code (as the collection
# "gno") and asks it how the socket protocol frames messages. Run it again at any time:
# an existing collection of that folder is brought up to date instead of being added
# twice; one of the same name left by a clone elsewhere is replaced.
# GNOCTL=/path/to/gnoctl uses an installed gnoctl instead of setting up .venv here.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ -z "${GNOCTL:-}" ]; then
  bash scripts/setup.sh
fi
G=${GNOCTL:-.venv/bin/gnoctl}
query=${2:-how are frames encoded on the socket}
$G daemon start --human
if [ $# -ge 1 ]; then
  folder=$(cd "$1" && pwd -P)
  name=$(basename "$folder")
  add=(collection add "$folder" --name "$name")
else
  folder=$(pwd -P)
  name=gno
  add=(collection add . --name gno --include README.md --include 'docs/*.md'
       --include 'gnod/**/*.py' --include 'gnoctl/**/*.py' --include 'scripts/*.sh')
fi
# The path the collection of that name indexes now ("" when there is none).
indexed=$($G collection list --json | python3 -c '
import json, sys
cols = json.load(sys.stdin)["collections"]
print(next((c["path"] for c in cols if c["name"] == sys.argv[1]), ""))' "$name")
if [ "$indexed" = "$folder" ]; then
  $G update "$name" --human
else
  if [ -n "$indexed" ]; then
    echo "collection $name indexed $indexed; indexing $folder instead"
    $G collection remove "$name" --human
  fi
  $G "${add[@]}" --human
fi
echo "--- gnoctl ls $name -n 8"
$G ls "$name" -n 8 --human --no-pager
echo "--- gnoctl search \"$query\""
$G search "$query" -n 5 --md || echo "(no match)"
# Hybrid search (BM25 + vectors + LLM variants, reranked). Without downloaded models
# (gnoctl models pull) it runs what it can and says what it skipped.
echo "--- gnoctl query \"$query\""
$G query "$query" -n 3 --human --no-pager || echo "(no match)"
$G status --human
