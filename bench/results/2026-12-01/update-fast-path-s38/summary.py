import collections, sys
# summary.py FILE: instructions per operation and per read/update of a YCSB A callgrind dump
path = sys.argv[1]
want = {
 "read": "engine::read::<impl engine::Engine>::run_select_as",
 "mut": "engine::exec::<impl engine::Engine>::mutations_in",
 "apply": "engine::exec::<impl engine::Engine>::apply_holding",
 "write": "<storage::LsmStorage as storage::Storage>::write",
 "commit": "fjall::batch::WriteBatch::commit",
 "append": "lsm_tree::tree::Tree::append_entry",
 "exec": "engine::Engine::execute_prepared",
}
n = collections.Counter(); ir = collections.Counter(); sub = collections.Counter()
fn = cfn = None; pending = None; total = 0
for line in open(path):
    if line.startswith("summary:"): total = int(line.split()[1])
    if line.startswith("fn="): fn = line[3:].strip()
    elif line.startswith("cfn="): cfn = line[4:].strip()
    elif line.startswith("calls="): pending = int(line[6:].split()[0])
    elif pending is not None and (line[:1].isdigit() or line[:1] in "+-*"):
        c = int(line.split()[1])
        if cfn != fn:
            for k, v in want.items():
                if cfn == v: n[k] += pending; ir[k] += c
        if fn == want["append"]: sub[cfn.split(" as ")[0][:60]] += c
        pending = None
reads, ups = n["read"], n["mut"]
print(f"ops {reads+ups} (reads {reads}, updates {ups}); all instructions/op {total/(reads+ups):,.0f}; execute_prepared/op {ir['exec']/n['exec']:,.0f}")
print(f"per read: run_select_as {ir['read']/reads:,.0f}")
print(f"per update: mutations_in {ir['mut']/ups:,.0f} + apply_holding {ir['apply']/ups:,.0f} = {(ir['mut']+ir['apply'])/ups:,.0f}; "
      f"of which storage write {ir['write']/ups:,.0f}, fjall commit {ir['commit']/ups:,.0f}, memtable append_entry {ir['append']/ups:,.0f}")
for k, v in sub.most_common(4): print(f"   append_entry -> {k}: {v/ups:,.0f}/update")
