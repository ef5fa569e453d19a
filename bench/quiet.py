#!/usr/bin/env python3
"""Runs a command on a quiet machine: every heavy process (compilers, JVMs, Python, peregrine,
...) that is neither an ancestor nor a descendant of this script is SIGSTOPped while the command
runs (re-scanned every 2 s), and SIGCONTed after, whatever happens.

    KEEP=cassandra-run-9742 bench/quiet.py env OLD=... NEW=... bench/compare-builds.sh

Processes whose command line contains an entry of $KEEP (comma separated) keep running: name
there a Cassandra the command started detached (scripts/cassandra.sh reparents it to init).

Why: on a shared 2-core machine, other work under SCHED_IDLE or nice did not isolate a
benchmark (autogroup scheduling gives each session its share whatever the policy inside it);
rounds were 40-60% apart. Stopped, they were a few percent apart. While it runs, do not start
compilers or Python from another shell (they are stopped too), and never stop the shell that
waits for it."""
import os, signal, subprocess, sys, time

# Command names (comm) stopped; anything else (shells, sshd, tool servers) keeps running.
HEAVY = {"cargo", "rustc", "cc", "c++", "ld", "ld.lld", "java", "python", "python3", "peregrine",
         "node", "go", "valgrind", "memcheck-amd64-", "callgrind-amd64", "mvn", "pytest", "rust-lld",
         "cc1", "cc1plus", "as", "collect2", "gcc", "g++", "clippy-driver", "npm"}
KEEP = [k for k in os.environ.get("KEEP", "").split(",") if k]

def procs():
    out = {}
    for p in os.listdir("/proc"):
        if not p.isdigit():
            continue
        try:
            with open(f"/proc/{p}/stat") as f:
                s = f.read()
            comm = s[s.index("(") + 1:s.rindex(")")]
            ppid = int(s[s.rindex(")") + 2:].split()[1])
            with open(f"/proc/{p}/cmdline", "rb") as f:
                cmd = f.read().replace(b"\0", b" ").decode(errors="replace")
            out[int(p)] = (comm, ppid, cmd)
        except (OSError, ValueError):
            pass
    return out

def main():
    me = os.getpid()
    child = subprocess.Popen(sys.argv[1:])
    stopped = set()
    try:
        while True:
            ps = procs()
            anc = set()
            p = me
            while p in ps and p not in anc:
                anc.add(p)
                p = ps[p][1]
            desc = {me, child.pid}
            changed = True
            while changed:
                changed = False
                for pid, (_, ppid, _) in ps.items():
                    if ppid in desc and pid not in desc:
                        desc.add(pid)
                        changed = True
            for pid, (comm, _, cmd) in ps.items():
                if pid in anc or pid in desc or pid in stopped or pid <= 1:
                    continue
                if comm not in HEAVY and not any(comm.startswith(h) for h in ("rustc", "cc1")):
                    continue
                if any(k in cmd for k in KEEP):
                    continue
                try:
                    os.kill(pid, signal.SIGSTOP)
                    stopped.add(pid)
                except OSError:
                    pass
            try:
                rc = child.wait(timeout=2)
                break
            except subprocess.TimeoutExpired:
                pass
    finally:
        for pid in stopped:
            try:
                os.kill(pid, signal.SIGCONT)
            except OSError:
                pass
        print(f"[freeze] continued {len(stopped)} processes", file=sys.stderr)
    sys.exit(rc)

main()
