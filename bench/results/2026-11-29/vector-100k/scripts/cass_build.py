"""Cassandra's index build over the 100k loaded rows, then recall and queries per server CPU s
(the bench's build phase, done by hand after the bench's DROP INDEX timed out)."""
import os, sys, time, threading, numpy as np
from cassandra.cluster import Cluster
from cassandra.query import SimpleStatement
PID = int(sys.argv[1]); PORT = int(sys.argv[2]); DATA = os.path.expanduser(sys.argv[3])
def cpu():
    f = open(f"/proc/{PID}/stat").read().rsplit(")", 1)[1].split()
    return (int(f[11]) + int(f[12])) / os.sysconf("SC_CLK_TCK")
def rss():
    return [int(l.split()[1]) for l in open(f"/proc/{PID}/status") if l.startswith("VmRSS")][0] / 1024
s = Cluster(["127.0.0.1"], port=PORT).connect()
if len(sys.argv) > 4:  # resume: the build's start (unix time) and Cassandra's CPU then
    t0, c0, tc = float(sys.argv[4]), float(sys.argv[5]), float("nan")
else:
    s.execute("DROP INDEX IF EXISTS vecbench.vec100000_v_ann", timeout=600)
    c0, t0 = cpu(), time.time()
    s.execute("CREATE CUSTOM INDEX vec100000_v_ann ON vecbench.vec100000 (v) USING 'StorageAttachedIndex'", timeout=1800)
    tc = time.time() - t0
st = s.prepare("SELECT is_queryable, is_building FROM system_views.sai_column_indexes WHERE keyspace_name = ? AND index_name = ?")
peak = 0
while True:
    try:
        r = s.execute(st, ("vecbench", "vec100000_v_ann"), timeout=60).one()
    except Exception as e:
        print("status query:", e, flush=True); continue
    peak = max(peak, rss())
    if r and r[0] and not r[1]: break
    time.sleep(0.05)
print(f"build {time.time()-t0:.1f}s (CREATE INDEX {tc:.1f}s), {cpu()-c0:.1f} server CPU s, rss {rss():.0f} MiB peak {peak:.0f}", flush=True)
def fvecs(p):
    a = np.fromfile(p, "<f4"); d = int(a[:1].view("<i4")[0]); return a.reshape(-1, d + 1)[:, 1:]
base = fvecs(f"{DATA}/base.fvecs")[:100000]; qs = fvecs(f"{DATA}/query.fvecs")
exact = np.argsort(-(qs @ base.T), axis=1)[:, :10]
ann = s.prepare("SELECT id FROM vecbench.vec100000 ORDER BY v ANN OF ? LIMIT 10")
# Queries per server CPU s: 16 in flight for 20 s after 2 s unrecorded.
lock = threading.Lock(); done = [0]; hits = [0]; stop = [False]; lat = []
def one(i, rec):
    t = time.perf_counter()
    f = s.execute_async(ann, (qs[i % len(qs)].tolist(),))
    def ok(rows):
        with lock:
            if rec[0]:
                done[0] += 1; lat.append(time.perf_counter() - t)
        if not stop[0]: one(i + 16, rec)
    f.add_callbacks(ok, lambda e: print("error", e))
rec = [False]
for i in range(16): one(i, rec)
time.sleep(2); c1, t1 = cpu(), time.time(); rec[0] = True
time.sleep(20); rec[0] = False; n = done[0]; dc, dt = cpu() - c1, time.time() - t1; stop[0] = True; time.sleep(1)
print(f"queries: {n} in {dt:.1f}s = {n/dt:.0f} q/s, {dc:.1f} server CPU s = {n/dc:.0f} q/server-cpu-s, p99 {np.percentile(lat, 99)*1e3:.1f} ms, rss {rss():.0f} MiB", flush=True)
r = 0
for i, q in enumerate(qs):
    ids = [row.id for row in s.execute(ann, (q.tolist(),), timeout=60)]
    r += len(set(ids) & set(exact[i].tolist()))
print(f"recall@10 {r / (10 * len(qs)):.4f}", flush=True)
