#!/usr/bin/env python3
"""Where Peregrine's written bytes went, per bench/disk-cassandra.sh run (issue 16 item 8).

    bench/disk_split.py OUT_DIR...

Reads each run's phases.txt (bytes written, tables, log, report) and peregrine-bytes.txt
(cumulative table bytes flushed and compacted, tables per level after settling) and prints
one markdown row per phase: the bytes of table files flushes and compactions wrote in it, the
rest of what the process wrote (its journal, and a few KB of manifests), and each over the
bytes acknowledged (write amplification, WA).
"""
import json
import os
import sys

KEY = 24  # bytes of a YCSB key, as disk-cassandra.sh counts them


def acknowledged(report):
    w, total = report["workload"], 0
    for op in report["ops"]:
        done = op["count"] - op["errors"] - op["timeouts"]
        if op["op"] == "insert":
            total += done * (w["field_count"] * w["field_length"] + KEY)
        elif op["op"] in ("update", "read-modify-write"):
            fields = w["field_count"] if w["write_all_fields"] else 1
            total += done * (fields * w["field_length"] + KEY)
    return total


def main():
    mb = lambda b: f"{b / 1e6:,.0f}"
    print("| run | phase | tables MB | tables per level (L0..L6) | written MB | journal+other | flushed | compacted | WA | WA journal / flush / compaction |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for out in sys.argv[1:]:
        name = os.path.basename(os.path.normpath(out))
        phases = [l.split() for l in open(os.path.join(out, "phases.txt")) if l.startswith("peregrine ")]
        counters = [l.split() for l in open(os.path.join(out, "peregrine-bytes.txt"))]
        flushed0 = compacted0 = 0
        for (server, phase, written, tables, _log, report), c in zip(phases, counters):
            flushed, compacted, levels = int(c[2]), int(c[4]), " ".join(c[6:])
            f, k = flushed - flushed0, compacted - compacted0
            flushed0, compacted0 = flushed, compacted
            w = int(written)
            rest = w - f - k
            ack = acknowledged(json.load(open(os.path.join(out, os.path.basename(report)))))
            print(f"| {name} | {phase} | {mb(int(tables))} | {levels} | {mb(w)} | {mb(rest)} | {mb(f)} | {mb(k)} "
                  f"| **{w / ack:.2f}** | {rest / ack:.2f} / {f / ack:.2f} / {k / ack:.2f} |")


if __name__ == "__main__":
    main()
