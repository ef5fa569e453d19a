#!/usr/bin/env bash
# The before/after pairs, alternated: run.sh for each NAME in turn (before = main 9a757d5,
# after = this branch; both release builds from this worktree), the after binary as the bench
# client for all. ROUNDS (default 1); PROFILE_FIRST=1 profiles the first round.
#   alternate.sh DATA OUT ROWS
set -u
DATA=$1 OUT=$2 ROWS=$3 REL=${REL:-/work/wt/vec12e-rel}
cd "$(dirname "$0")"
for r in $(seq 1 "${ROUNDS:-1}"); do
  p=0; [ "$r" = 1 ] && p=${PROFILE_FIRST:-0}
  for b in before after; do
    PROFILE=$p PORT=47900 BENCH=$REL/peregrine-after ./run.sh "$REL/peregrine-$b" "$DATA" "$OUT" "$ROWS" "$b$r"
  done
done
