#!/usr/bin/env python3
"""schedset.py PATTERN MODE: keeps every fjall:worker / storage-idle thread of the servers whose
command line matches PATTERN in MODE: `nice:N` (SCHED_OTHER at nice N), `slice:N:US` (SCHED_OTHER,
nice N, a custom EEVDF slice of US microseconds via sched_setattr), `idle` (SCHED_IDLE)."""
import ctypes, os, struct, subprocess, sys, time
libc = ctypes.CDLL(None, use_errno=True)
SYS_sched_setattr = 314
def setattr_(tid, policy, nice, runtime_ns):
    attr = struct.pack('IIQiIQQQII', 56, policy, 0, nice, 0, runtime_ns, 0, 0, 0, 0)
    buf = ctypes.create_string_buffer(attr, 56)
    r = libc.syscall(SYS_sched_setattr, tid, buf, 0)
    if r != 0:
        e = ctypes.get_errno(); print(f"sched_setattr {tid}: {os.strerror(e)}", flush=True)
pattern, mode = sys.argv[1], sys.argv[2]
# optional: REQUEST_SLICE_US, a custom slice for the request threads (comm `peregrine`), same nice
req_us = int(sys.argv[3]) if len(sys.argv) > 3 else 0
done = set()
while True:
    pids = subprocess.run(['pgrep', '-f', pattern + ' serve'], capture_output=True, text=True).stdout.split()
    for p in pids:
        try: tids = os.listdir(f'/proc/{p}/task')
        except FileNotFoundError: continue
        for t in tids:
            try: comm = open(f'/proc/{p}/task/{t}/comm').read().strip()
            except FileNotFoundError: continue
            if (p, t) in done: continue
            tid = int(t)
            if comm == 'peregrine' and req_us:
                nice = int(open(f'/proc/{p}/task/{t}/stat').read().rsplit(')', 1)[1].split()[16])
                setattr_(tid, 0, nice, req_us * 1000)
                done.add((p, t)); print(f"{time.time():.0f} {tid} {comm} -> slice {req_us} us nice {nice}", flush=True)
                continue
            if comm not in ('fjall:worker', 'storage-idle'): continue
            if mode == 'idle': setattr_(tid, 5, 0, 0)
            elif mode.startswith('nice:'): setattr_(tid, 0, int(mode[5:]), 0)
            elif mode.startswith('slice:'):
                _, n, us = mode.split(':'); setattr_(tid, 0, int(n), int(us) * 1000)
            done.add((p, t)); print(f"{time.time():.0f} {tid} {comm} -> {mode}", flush=True)
    time.sleep(0.2)
