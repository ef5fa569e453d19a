# The passes of this session's investigation (README.md beside ../proxy-cold-pass-affinity/):
# `source` it, start a Cassandra on CPORT (scripts/cassandra.sh, taskset -c 0), then e.g.
#   pass NAME PORT            one sequential pass, Cassandra CPU and read/write calls per read
#   ppass NAME PROXY_BIN      the same through a fresh proxy, with the proxy's CPU per read
#   tpass2 NAME PORT N        N reads under `perf trace -s` on Cassandra (calls per read)
#   hot NAME PROXY_BIN        100k reads over 2000 keys through a fresh proxy, twice (hits)
# EXTRA="--target-rate 8000" makes the passes open loop. Scratch files go to /tmp/proxy16.
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
BIN=${BIN:-target/release/peregrine}
CPORT=9995
RECORDS=${RECORDS:-100000}
CONCURRENCY=${CONCURRENCY:-32}
d=/tmp/proxy16/data; mkdir -p $d
O=/tmp/proxy16/out; mkdir -p $O
cpid() { pgrep -f "cassandra-run-$CPORT" | head -1; }
bench() { taskset -c 1 "$BIN" bench "$@" --records "$RECORDS" --out "$d" --quiet; }
calls() { awk '/^sysc[rw]/ {printf "%s ", $2}' "/proc/$1/io"; }
ticks() { awk '{print $14+$15}' "/proc/$1/stat"; }
# pass NAME PORT [extra bench args]
pass() {
    local name=$1 port=$2; shift 2
    local c; c=$(cpid)
    local io0 io1 c0 c1
    python3 $here/threads.py snap $c $O/$name.t0
    io0=$(calls $c); c0=$(ticks $c)
    bench run --workload c --distribution sequential --operations "$RECORDS" --concurrency "$CONCURRENCY" \
        --hosts "127.0.0.1:$port" --name "$name" $EXTRA "$@" >"$O/$name.txt" 2>&1
    io1=$(calls $c); c1=$(ticks $c)
    python3 $here/threads.py snap $c $O/$name.t1
    local ops; ops=$(awk '$1 == "overall" {gsub(",", "", $4); print $4}' "$O/$name.txt")
    echo "$name ops/s $ops cass_us/op $(awk "BEGIN {printf \"%.1f\", ($c1 - $c0) * 1e4 / $RECORDS}") rd/op $(echo "$io0 $io1" | awk -v n="$RECORDS" '{printf "%.3f", ($3 - $1) / n}') wr/op $(echo "$io0 $io1" | awk -v n="$RECORDS" '{printf "%.3f", ($4 - $2) / n}') load $(cut -d' ' -f1 /proc/loadavg)"
}
startproxy() { # BIN PORT
    taskset -c 1 "$1" serve --upstream "127.0.0.1:$CPORT" --listen "127.0.0.1:$2" \
        --admin-listen "127.0.0.1:$(( $2 + 1 ))" --data-dir "$d/proxy-$2" >"$O/proxy-$2.log" 2>&1 &
    echo $! > $O/proxy-$2.pid
    for _ in $(seq 1 300); do (exec 3<>"/dev/tcp/127.0.0.1/$2") 2>/dev/null && break; sleep 0.2; done
}
stopproxy() { kill $(cat $O/proxy-$1.pid); wait $(cat $O/proxy-$1.pid) 2>/dev/null; rm -rf $d/proxy-$1; }
# tpass NAME PORT: a pass with a 2 s perf trace in its middle; prints syscalls per op in that window
tpass() {
    local name=$1 port=$2; shift 2
    local c; c=$(cpid)
    bench run --workload c --distribution sequential --operations "$RECORDS" --concurrency "$CONCURRENCY" \
        --hosts "127.0.0.1:$port" --name "$name" "$@" >"$O/$name.txt" 2>&1 &
    local bp=$!
    sleep 2
    local r0; r0=$(curl -s http://127.0.0.1:48601/metrics 2>/dev/null | awk '/^peregrine_proxy_upstream_requests/ {print $2}')
    timeout -s INT 2 perf trace -s -p $c -o $O/$name.ptrace 2>/dev/null
    wait $bp
    local ops; ops=$(awk '$1 == "overall" {gsub(",", "", $4); print $4}' "$O/$name.txt")
    echo "$name ops/s $ops (window ~2 s: per op = calls / (2 * ops/s))"
    python3 $here/ptsum.py $O/$name.ptrace $(( ops * 2 ))
}
# tpass2 NAME PORT N: N reads with perf trace over the whole pass
tpass2() {
    local name=$1 port=$2 n=$3; shift 3
    local c; c=$(cpid)
    perf trace -s -p $c -o $O/$name.ptrace 2>/dev/null &
    local tp=$!
    sleep 1
    bench run --workload c --distribution sequential --operations "$n" --concurrency "$CONCURRENCY" \
        --hosts "127.0.0.1:$port" --name "$name" $EXTRA "$@" >"$O/$name.txt" 2>&1
    kill -INT $tp; wait $tp
    local ops; ops=$(awk '$1 == "overall" {gsub(",", "", $4); print $4}' "$O/$name.txt")
    echo "$name ops/s $ops"
    python3 $here/ptsum.py $O/$name.ptrace $n
}
# cpass NAME PORT N PID: N reads with perf trace on PID (a client-side process) over the pass
cpass() {
    local name=$1 port=$2 n=$3 tpid=$4; shift 4
    perf trace -s -p $tpid -o $O/$name.ctrace 2>/dev/null &
    local tp=$!
    sleep 1
    bench run --workload c --distribution sequential --operations "$n" --concurrency "$CONCURRENCY" \
        --hosts "127.0.0.1:$port" --name "$name" $EXTRA "$@" >"$O/$name.txt" 2>&1
    kill -INT $tp; wait $tp
    local ops; ops=$(awk '$1 == "overall" {gsub(",", "", $4); print $4}' "$O/$name.txt")
    echo "$name ops/s $ops"
    python3 $here/ptsum.py $O/$name.ctrace $n
}
startproxycfg() { # BIN PORT CONFIG
    taskset -c 1 "$1" serve --config "$3" --upstream "127.0.0.1:$CPORT" --listen "127.0.0.1:$2" \
        --admin-listen "127.0.0.1:$(( $2 + 1 ))" --data-dir "$d/proxy-$2" >"$O/proxy-$2.log" 2>&1 &
    echo $! > $O/proxy-$2.pid
    for _ in $(seq 1 300); do (exec 3<>"/dev/tcp/127.0.0.1/$2") 2>/dev/null && break; sleep 0.2; done
}
# ppass NAME BIN: fresh proxy of BIN, a pass through it, its CPU us/op
ppass() {
    startproxy $2 48600
    local pp; pp=$(cat $O/proxy-48600.pid); local t0; t0=$(ticks $pp)
    local line; line=$(pass $1 48600)
    local t1; t1=$(ticks $pp)
    stopproxy 48600
    echo "$line proxy_us/op $(awk "BEGIN {printf \"%.1f\", ($t1 - $t0) * 1e4 / $RECORDS}")"
}
# hits NAME BIN: fresh proxy, a cold pass, then two passes of hits; prints each with proxy CPU us/op
hits() {
    startproxy $2 48600
    local pp; pp=$(cat $O/proxy-48600.pid)
    for k in cold hit1 hit2; do
        local t0; t0=$(ticks $pp)
        local line; line=$(pass $1-$k 48600)
        local t1; t1=$(ticks $pp)
        echo "$line proxy_us/op $(awk "BEGIN {printf \"%.1f\", ($t1 - $t0) * 1e4 / $RECORDS}")"
    done
    curl -s "http://127.0.0.1:48601/metrics" | grep -E "^peregrine_proxy_cache_(hits|misses)" | tr '\n' ' '; echo
    stopproxy 48600
}
# hot NAME BIN: fresh proxy; 100k reads over the first 2000 keys (default distribution), twice
hot() {
    startproxy $2 48600
    local pp; pp=$(cat $O/proxy-48600.pid)
    for k in 1 2; do
        local t0; t0=$(ticks $pp)
        taskset -c 1 "$BIN" bench run --workload c --operations 100000 --records 2000 --concurrency 32 \
            --hosts 127.0.0.1:48600 --name $1-$k --out "$d" --quiet > $O/$1-$k.txt 2>&1
        local t1; t1=$(ticks $pp)
        echo "$1-$k ops/s $(awk '$1 == "overall" {gsub(",", "", $4); print $4}' $O/$1-$k.txt) proxy_us/op $(awk "BEGIN {printf \"%.2f\", ($t1 - $t0) * 1e4 / 100000}") load $(cut -d' ' -f1 /proc/loadavg)"
    done
    curl -s "http://127.0.0.1:48601/metrics" | grep -E "^peregrine_proxy_cache_(hits|misses).*dram" | tr '\n' ' '; echo
    stopproxy 48600
}
