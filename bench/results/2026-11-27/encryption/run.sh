#!/usr/bin/env bash
# Issue 13 item 5: the cost of encryption at rest, YCSB A and C with and without, in one run:
# two Peregrines from the same binary (BIN), one plain and one with `encryption_at_rest`, each
# with a 64 MiB block cache so that reads go to the (sealed) data files, then `bench compare`
# (alternated rounds, medians). The goal: at most 10% less throughput with encryption
# ("gain vs enc" of `plain` at most 1.11x).
#   run.sh BIN OUT_DIR   (env: RECORDS DURATION ROUNDS CONC CACHE: block cache bytes, 64 MiB;
#   CACHE=default leaves the server's default; SERVER_CPU / CLIENT_CPU pin the two servers and
#   the bench client with taskset when set)
set -euo pipefail
BIN=$1 OUT=$2
RECORDS=${RECORDS:-200000} DURATION=${DURATION:-20s} ROUNDS=${ROUNDS:-3} CONC=${CONC:-32}
CACHE=${CACHE:-67108864}
server=(); client=()
[ -n "${SERVER_CPU:-}" ] && server=(taskset -c "$SERVER_CPU")
[ -n "${CLIENT_CPU:-}" ] && client=(taskset -c "$CLIENT_CPU")
cache_line="storage_cache_bytes: $CACHE\n"; [ "$CACHE" = default ] && cache_line=""

mkdir -p "$OUT"
D=$(mktemp -d)
trap 'kill $P1 $P2 2>/dev/null; wait 2>/dev/null; rm -rf "$D"' EXIT
printf '1 %s\n' "$(od -An -tx1 -N32 /dev/urandom | tr -d ' \n')" > "$D/keys"
chmod 600 "$D/keys"
printf "admin_listen: 127.0.0.1:7298\n$cache_line" > "$D/plain.yaml"
printf "admin_listen: 127.0.0.1:7299\n${cache_line}encryption_at_rest:\n  enabled: true\n  key_file: %s/keys\n" "$D" > "$D/enc.yaml"
"${server[@]}" "$BIN" serve --config "$D/plain.yaml" --listen 127.0.0.1:19042 --data-dir "$D/plain" > "$OUT/plain.log" 2>&1 & P1=$!
"${server[@]}" "$BIN" serve --config "$D/enc.yaml" --listen 127.0.0.1:19043 --data-dir "$D/enc" > "$OUT/enc.log" 2>&1 & P2=$!
for port in 19042 19043; do
  for _ in $(seq 1 600); do (echo > "/dev/tcp/127.0.0.1/$port") 2>/dev/null && break; sleep 0.1; done
done
for w in a c; do
  load=(); [ "$w" = a ] && load=(--load)
  "${client[@]}" "$BIN" bench compare --a "plain=127.0.0.1:19042@$P1" --b "enc=127.0.0.1:19043@$P2" --workload "$w" \
    --records "$RECORDS" "${load[@]}" --duration "$DURATION" --warmup 2s --rounds "$ROUNDS" \
    --concurrency "$CONC" --out "$OUT" --name "ycsb-$w" > "$OUT/ycsb-$w.stdout" 2>&1
done
# The encrypted server's data files hold no table name in clear (the plain one's do).
grep -rqa usertable "$D/plain" && echo "plain data dir: the table name in clear (expected)" | tee -a "$OUT/ycsb-c.stdout"
if grep -rqa usertable "$D/enc"; then echo "encrypted data dir: the table name in clear!" | tee -a "$OUT/ycsb-c.stdout"; exit 1; fi
echo "encrypted data dir: no table name in clear" | tee -a "$OUT/ycsb-c.stdout"
