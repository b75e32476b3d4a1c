#!/usr/bin/env bash
# One command from a fresh clone: set up, start gnod, index, search.
#   bash scripts/quickstart.sh [FOLDER] [QUERY]
# Without FOLDER it indexes this repository's README, docs and code (as the collection
# "gno") and asks it how the socket protocol frames messages. Run it again at any time:
# an existing collection is brought up to date instead of being added twice.
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
  folder=$1
  name=$(basename "$(cd "$folder" && pwd)")
  add=(collection add "$folder" --name "$name")
else
  name=gno
  add=(collection add . --name gno --include README.md --include 'docs/*.md'
       --include 'gnod/**/*.py' --include 'gnoctl/**/*.py' --include 'scripts/*.sh')
fi
# The list is read whole, then searched: no pipe for grep -q to cut short.
collections=$($G collection list --json)
if grep -q "\"name\": \"$name\"" <<<"$collections"; then
  $G update "$name" --human
else
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
