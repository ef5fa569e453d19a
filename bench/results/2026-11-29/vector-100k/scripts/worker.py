# One-off second embedder: chunks from the last down, while make_dataset.py goes up.
import sys, time, random, importlib.util, numpy as np
from pathlib import Path
spec = importlib.util.spec_from_file_location("md", sys.argv[1]); md = importlib.util.module_from_spec(spec); spec.loader.exec_module(md)
out = Path(sys.argv[2]); need = 101000
sentences, _, _ = md.man_sentences(); sentences.sort(); random.Random(12).shuffle(sentences)
model = md.load_model(out / "cache")
for c in reversed(range(0, need, md.CHUNK)):
    texts = sentences[c : c + md.CHUNK]
    f = md.chunk_file(out, c, texts, model)
    if not f.exists() and c + md.CHUNK > need:
        texts = sentences[c:need]; f = md.chunk_file(out, c, texts, model)
    tmp = f.with_suffix(".tmp.npy")
    if f.exists() or tmp.exists():
        print("stop at", c // md.CHUNK, file=sys.stderr); break
    t1 = time.time(); np.save(tmp, md.embed(model, texts)); tmp.replace(f)
    print(f"worker chunk {c // md.CHUNK}: {len(texts)} in {time.time()-t1:.0f}s", file=sys.stderr, flush=True)
