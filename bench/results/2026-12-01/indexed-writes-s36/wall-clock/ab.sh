#!/usr/bin/env bash
# OLD NEW ROWS OUT: two Peregrine builds on CPU 0, bench indexed write phase alternated, client CPU 1
set -euo pipefail
OLD=$1 NEW=$2 ROWS=$3 OUT=$4; mkdir -p $OUT
D=$(mktemp -d)
nice -n -10 taskset -c 0 $OLD serve --listen 127.0.0.1:19571 --admin-listen 127.0.0.1:19671 --data-dir $D/old > $OUT/old.log 2>&1 & po=$!
nice -n -10 taskset -c 0 $NEW serve --listen 127.0.0.1:19572 --admin-listen 127.0.0.1:19672 --data-dir $D/new > $OUT/new.log 2>&1 & pn=$!
trap "kill $po $pn; wait; rm -rf $D" EXIT
for p in 19571 19572; do for _ in $(seq 1 300); do (echo >/dev/tcp/127.0.0.1/$p) 2>/dev/null && break; sleep 0.1; done; done
nice -n -10 taskset -c 1 $NEW bench indexed --endpoint "old=127.0.0.1:19571@$po" --endpoint "new=127.0.0.1:19572@$pn" \
  --rows $ROWS --phases ${PHASES:-write} --phase ${PHASE:-15s} --rounds ${ROUNDS:-3} --seed 36 --out $OUT --name ab-$ROWS 2>$OUT/ab.log | tail -3
