import sys, time, os, importlib.util, numpy as np
from pathlib import Path
spec = importlib.util.spec_from_file_location("md", sys.argv[1]); md = importlib.util.module_from_spec(spec); spec.loader.exec_module(md)
n = int(sys.argv[2]); fn = sys.argv[3] if len(sys.argv) > 3 else "embed"
d = Path(os.path.expanduser("~/.cache/peregrine/vectors"))
texts = d.joinpath("base.txt").read_text().split("\n")[:20000]
stored = np.fromfile(d / "base.fvecs", "<f4").reshape(-1, 385)[:, 1:]
idx = list(range(0, 20000, 20000 // n))[:n]
model = md.load_model(d / "cache")
t = time.time(); c = time.process_time()
out = getattr(md, fn)(model, [texts[i] for i in idx])
dt = time.time() - t; dc = time.process_time() - c
ref = stored[idx]
print(f"{n} sentences: {dt:.1f}s wall {n/dt:.1f}/s, {dc:.1f} cpu s {n/dc:.1f}/cpu s; max|diff| {np.abs(out-ref).max():.2e} min cos {(out*ref).sum(1).min():.8f} dtype {out.dtype}")
np.save(f"/tmp/vec100k/out-{fn}-{n}.npy", out)
