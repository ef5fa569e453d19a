"""allocs.py CG OPS: calls a operation into the allocator's entry points (mi_malloc_aligned, malloc, mi_malloc, realloc), all callers."""
import re, sys
path, ops = sys.argv[1], int(sys.argv[2])
rx = re.compile(r"^(mi_malloc_aligned|malloc|mi_malloc|mi_zalloc_aligned|mi_realloc_aligned|realloc)$")
n = 0; cfn = None
for line in open(path):
    if line.startswith("cfn="): cfn = re.sub(r"::h[0-9a-f]{16}$", "", line[4:].strip())
    elif line.startswith("calls=") and cfn and rx.search(cfn): n += int(line[6:].split()[0])
print(f"{n/ops:.2f}")
