"""A generated stand-in for the 100k embeddings (used while bench/vectors/make_dataset.sh was
still embedding): N unit 384-dim vectors around 2,000 random centres, and Q queries drawn the
same way (not in the base), as fvecs.  python synth.py OUT N Q [seed]"""
import sys
import numpy as np

out, n, q = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
rng = np.random.default_rng(int(sys.argv[4]) if len(sys.argv) > 4 else 27)
dim, centres = 384, 2000
c = rng.standard_normal((centres, dim), dtype=np.float32)


def draw(count):
    v = c[rng.integers(0, centres, count)] + 0.8 * rng.standard_normal((count, dim), dtype=np.float32)
    return (v / np.linalg.norm(v, axis=1, keepdims=True)).astype(np.float32)


def fvecs(path, v):
    head = np.full((len(v), 1), dim, dtype=np.int32).view(np.float32)
    np.hstack([head, v]).tofile(path)


fvecs(f"{out}/query.fvecs", draw(q))
fvecs(f"{out}/base.fvecs", draw(n))
