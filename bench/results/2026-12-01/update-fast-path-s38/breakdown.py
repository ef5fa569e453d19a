import collections, sys
# breakdown.py FILE: per read and per update, the inclusive instructions of the engine's and the
# storage's main steps in a YCSB A callgrind dump (calls into each function from other functions,
# summed over callers; divided by the reads or updates counted by run_select_as / mutations_in)
path = sys.argv[1]
rows = [
 ("read", "engine::read::<impl engine::Engine>::run_select_as"),
 ("read", "<storage::LsmStorage as storage::Storage>::get_shared"),
 ("read", "engine::read::SelectRun::visit_row"),
 ("read", "engine::row::in_place::RawRow::next_cell"),
 ("update", "engine::exec::<impl engine::Engine>::mutations_in"),
 ("update", "engine::exec::<impl engine::Engine>::apply_holding"),
 ("update", "<storage::LsmStorage as storage::Storage>::write"),
 ("update", "fjall::batch::WriteBatch::commit"),
 ("update", "lsm_tree::tree::Tree::append_entry"),
 ("update", "<storage::MergeOperator as lsm_tree::merge_operator::MergeOperator>::merge"),
 ("both", "<engine::row::RowMerge as storage::Merge>::merge"),
]
n = collections.Counter(); ir = collections.Counter(); fn = cfn = None; pending = None
names = {r[1] for r in rows}
for line in open(path):
    if line.startswith("fn="): fn = line[3:].strip()
    elif line.startswith("cfn="): cfn = line[4:].strip()
    elif line.startswith("calls="): pending = int(line[6:].split()[0])
    elif pending is not None and (line[:1].isdigit() or line[:1] in "+-*"):
        if cfn != fn and cfn in names: n[cfn] += pending; ir[cfn] += int(line.split()[1])
        pending = None
reads = n[rows[0][1]]; ups = n[rows[4][1]]
for kind, name in rows:
    per = {"read": reads, "update": ups, "both": reads + ups}[kind]
    c = n[name]
    print(f"{kind:6} {ir[name]/per:9,.0f}/{'op' if kind=='both' else kind:6}  calls {c:6d}  {ir[name]/max(c,1):8,.0f}/call  {name[:90]}")
