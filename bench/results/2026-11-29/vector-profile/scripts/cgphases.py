"""Drives one Peregrine server (usually under Callgrind) through the vector phases whose
server instructions are counted, zeroing and dumping Callgrind's counters around each:

  load   ROWS rows of base.fvecs into vecbench.vec<ROWS> (no index): only with --load
  build  CREATE CUSTOM INDEX over the loaded rows, until sai_column_indexes says built
  query  WARM unmeasured then QUERIES measured ANN queries (prepared, LIMIT 10, one at a time)
  insert INSERTS more rows (the query vectors, ids from 10,000,000) into the indexed table

usage: cgphases.py PORT PID DATA ROWS PHASE[,PHASE...] [--queries N] [--inserts N]
PID 0: no Callgrind (a native server: only the answers, e.g. to load a data dir).
Prints one line per phase and, for queries, the ids answered (for a before/after diff).
"""
import array, subprocess, sys, time
from cassandra.cluster import Cluster, ExecutionProfile, EXEC_PROFILE_DEFAULT
from cassandra.concurrent import execute_concurrent_with_args


def fvecs(path, limit):
    out = []
    with open(path, "rb") as f:
        while len(out) < limit:
            head = f.read(4)
            if not head:
                break
            dim = int.from_bytes(head, "little")
            a = array.array("f")
            a.frombytes(f.read(4 * dim))
            out.append(list(a))
    return out


def cg(pid, *args):
    if pid:
        subprocess.run(["callgrind_control", *args, str(pid)], check=True, capture_output=True)


def main():
    port, pid, data, rows, phases = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], int(sys.argv[4]), sys.argv[5].split(",")
    opt = dict(zip(sys.argv[6::2], sys.argv[7::2]))
    nq, ni, warm = int(opt.get("--queries", 200)), int(opt.get("--inserts", 500)), int(opt.get("--warm", 20))
    profile = ExecutionProfile(request_timeout=4 * 3600)
    cluster = Cluster(["127.0.0.1"], port=port, execution_profiles={EXEC_PROFILE_DEFAULT: profile},
                      connect_timeout=600, control_connection_timeout=600)
    s = cluster.connect()
    t = f"vecbench.vec{rows}"
    for phase in phases:
        started = time.time()
        if phase == "load":
            base = fvecs(f"{data}/base.fvecs", rows)
            s.execute("CREATE KEYSPACE IF NOT EXISTS vecbench WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}")
            s.execute(f"DROP TABLE IF EXISTS {t}")
            s.execute(f"CREATE TABLE {t} (id int PRIMARY KEY, v vector<float, {len(base[0])}>)")
            ins = s.prepare(f"INSERT INTO {t} (id, v) VALUES (?, ?)")
            cg(pid, "-z")
            execute_concurrent_with_args(s, ins, [(i, v) for i, v in enumerate(base)], concurrency=32)
            cg(pid, "-d", "load")
        elif phase == "build":
            cg(pid, "-z")
            s.execute(f"CREATE CUSTOM INDEX vec{rows}_v_ann ON {t} (v) USING 'StorageAttachedIndex'")
            # As the bench: until the index is queryable and no longer building.
            while True:
                r = s.execute("SELECT is_queryable, is_building FROM system_views.sai_column_indexes "
                              "WHERE keyspace_name = 'vecbench' AND index_name = %s", (f"vec{rows}_v_ann",)).one()
                if r and r.is_queryable and not r.is_building:
                    break
                time.sleep(0.5)
            cg(pid, "-d", "build")
        elif phase == "query":
            qs = fvecs(f"{data}/query.fvecs", nq)
            sel = s.prepare(f"SELECT id FROM {t} ORDER BY v ANN OF ? LIMIT 10")
            for q in qs[:warm]:
                s.execute(sel, (q,))
            cg(pid, "-z")
            answers = [[r.id for r in s.execute(sel, (q,))] for q in qs]
            cg(pid, "-d", "query")
            for i, a in enumerate(answers):
                print("answer", i, *a)
        elif phase == "insert":
            qs = fvecs(f"{data}/query.fvecs", ni)
            ins = s.prepare(f"INSERT INTO {t} (id, v) VALUES (?, ?)")
            cg(pid, "-z")
            for i, q in enumerate(qs):
                s.execute(ins, (10_000_000 + i, q))
            cg(pid, "-d", "insert")
        elif phase == "drop":
            s.execute(f"DROP INDEX IF EXISTS vecbench.vec{rows}_v_ann")
        print(f"phase {phase} {time.time() - started:.1f}s", flush=True)
    cluster.shutdown()


main()
