import collections, glob, re, sys
# threads.py PREFIX: per-thread instructions of a `--separate-threads=yes` Callgrind dump
# (files PREFIX*-NN), per update/operation, and the inclusive cost of the named functions in each.
prefix = sys.argv[1]
fns = {
 "ops: read": "engine::read::<impl engine::Engine>::run_select_as",
 "ops: update": "engine::exec::<impl engine::Engine>::mutations_in",
 "apply_holding": "engine::exec::<impl engine::Engine>::apply_holding",
 "storage write": "<storage::LsmStorage as storage::Storage>::write",
 "fjall commit": "fjall::batch::WriteBatch::commit",
 "journal (write_batch_plain)": "fjall::journal::writer::Writer::write_batch_plain",
 "flush (flush::worker::run)": "fjall::flush::worker::run",
 "compaction (do_compaction)": "lsm_tree::compaction::worker::do_compaction",
 "  of which warm_hot_blocks": "lsm_tree::compaction::worker::warm_hot_blocks",
 "journal sync (ticker)": "storage::Shared::sync_journal",
}
rows = []
for path in sorted(glob.glob(prefix + "*-[0-9][0-9]")):
    total = 0; n = collections.Counter(); ir = collections.Counter(); fnames = set()
    fn = cfn = None; pending = None
    for line in open(path):
        if line.startswith(("summary:", "totals:")): total = max(total, int(line.split()[1]))
        if line.startswith("fn="): fn = line[3:].strip(); fnames.add(fn)
        elif line.startswith("cfn="): cfn = line[4:].strip()
        elif line.startswith("calls="): pending = int(line[6:].split()[0])
        elif pending is not None and (line[:1].isdigit() or line[:1] in "+-*"):
            c = int(line.split()[1])
            if cfn != fn:
                for k, v in fns.items():
                    if cfn == v: n[k] += pending; ir[k] += c
            pending = None
    rows.append((path, total, n, ir, fnames))
reads = sum(r[2]["ops: read"] for r in rows); ups = sum(r[2]["ops: update"] for r in rows)
ops = reads + ups; grand = sum(r[1] for r in rows)
print(f"{prefix}: operations {ops} (reads {reads}, updates {ups}); all threads {grand:,} instructions = {grand/ops:,.0f}/op, {grand/max(ups,1):,.0f}/update")
for path, total, n, ir, names in rows:
    if total == 0: continue
    kind = ("request" if n["ops: read"] + n["ops: update"] else
            "fjall worker" if any(x.startswith("fjall::worker_pool") for x in names) else
            "other")
    hint = [x for x in names if "thread" in x.lower() and "start" in x.lower()][:1]
    print(f"  {path.rsplit('-',1)[1]} {kind:12s} {total:>16,} = {total/max(ups,1):>9,.0f}/update ({100*total/grand:5.1f}%)")
    for k in fns:
        if ir[k]: print(f"      {k:28s} calls {n[k]:>8,} incl {ir[k]:>16,} = {ir[k]/max(ups,1):>9,.0f}/update")
