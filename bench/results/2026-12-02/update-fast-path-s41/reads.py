import collections, sys
# reads.py FILE: per read, run_select_as with and without the table read (Table::get), and the
# memtable lookup's own instructions (get_hashed, its skip-list search inlined). Table::get
# runs for reads and for the completions of partial memtable versions (get_merged called by
# append_entry's closure), taken out at Table::get's mean cost per call, and for the stored
# rows a reading write gets (`get_shared` called by apply_holding's closure): the rest is
# shared in proportion to the reads' `get_shared` calls.
path = sys.argv[1]
RS = "engine::read::<impl engine::Engine>::run_select_as"
TG = "lsm_tree::table::Table::get"
GM = "lsm_tree::tree::Tree::get_merged"
CL = "lsm_tree::tree::Tree::append_entry::{{closure}}"
GH = "lsm_tree::memtable::Memtable::get_hashed"
GS = "<storage::LsmStorage as storage::Storage>::get_shared"
WC = "engine::exec::<impl engine::Engine>::apply_holding::{{closure}}"
n = collections.Counter(); ir = collections.Counter(); selfc = collections.Counter()
fn = cfn = None; pending = None; comp = 0; wgs = 0
for line in open(path):
    if line.startswith("fn="): fn = line[3:].strip()
    elif line.startswith("cfn="): cfn = line[4:].strip()
    elif line.startswith("calls="): pending = int(line[6:].split()[0])
    elif line[:1].isdigit() or line[:1] in "+-*":
        p = line.split()
        if pending is not None:
            if cfn != fn: n[cfn] += pending; ir[cfn] += int(p[1])
            if fn == CL and cfn == GM: comp += pending
            if fn == WC and cfn == GS: wgs += pending
            pending = None
        elif len(p) > 1: selfc[fn] += int(p[1])
reads = n[RS]; tg_mean = ir[TG] / n[TG]
share = (n[GS] - wgs) / n[GS]
tg_reads = (ir[TG] - comp * tg_mean) * share
print(f"reads {reads}: run_select_as {ir[RS]/reads:,.0f}/read; Table::get {tg_mean:,.0f}/call, "
      f"{(n[TG]-comp)*share/reads:.2f} calls/read; read less Table::get {(ir[RS]-tg_reads)/reads:,.0f}/read; "
      f"get_hashed self {selfc[GH]/max(n[GH],1):,.0f}/call ({n[GH]} calls); completions {comp}")
