"""callcount.py CG FN OPS: calls per op into functions matching FN, by caller."""
import collections, re, sys
path, pat, ops = sys.argv[1], sys.argv[2], int(sys.argv[3])
rx = re.compile(pat); n = collections.Counter(); fn = cfn = None
for line in open(path):
    if line.startswith("fn="): fn = re.sub(r"::h[0-9a-f]{16}$", "", line[3:].strip())
    elif line.startswith("cfn="): cfn = re.sub(r"::h[0-9a-f]{16}$", "", line[4:].strip())
    elif line.startswith("calls=") and cfn and rx.search(cfn):
        n[(fn, cfn)] += int(line[6:].split()[0])
for (f, c), v in n.most_common(10): print(f"{v/ops:8.2f}  {f[:80]} -> {c[:60]}")
