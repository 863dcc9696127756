"""One trained head's q and k on a short text of our own: the real tokens the page shows beside its Gaussian draws.

    python -m experiments.real_transformer.export_head --out web/data/real_head.json

Trains one model of this experiment (run.py's recipe: 2 layers, one head of d_k = 64 per layer, q.k / sqrt(d_k),
GPT-2 init, AdamW at a peak lr of 3e-3, 1,200 steps of 16 x 64 bytes of CPython's standard-library source), then
feeds it TEXT, a line of Python written for this page (not a quote of the training text), and writes each layer's
q and k for it (after the layer's LayerNorm and the q/k projection, before any scaling), rounded to 4 significant
digits, with the run's record and provenance. Deterministic given the seed; about a minute on one CPU core.
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import time

import torch

from . import data
from .run import SIZES, git_head, settings, sig, train_one

#: 63 bytes of Python written for this page: a softmax, the operation the page is about.
TEXT = "def softmax(x):\n    e = exp(x - x.max())\n    return e / e.sum()"
SIZE = dataclasses.replace(SIZES["cpu"], d_ks=(64,), seq_len=64, batch=16, steps=1200, eval_every=300, seeds=(0,),
                           rules=("sqrt",), lrs=(3e-3,), inits=("gpt2",), jobs=1)
RUN = {"rule": "sqrt", "init": "gpt2", "d_k": 64, "lr": 3e-3, "seed": 0}


def head_qk(model, text: str) -> list[dict]:
    """Each layer's (q, k) for ``text``: the head's projections of the LayerNorm'd input, before the scale."""
    idx = torch.tensor([list(text.encode("utf-8"))], dtype=torch.long)
    seen: list[torch.Tensor] = []
    hooks = [block.attn.register_forward_pre_hook(lambda _m, args: seen.append(args[0].detach()))
             for block in model.blocks]
    try:
        with torch.no_grad():
            model(idx)
    finally:
        for h in hooks:
            h.remove()
    out = []
    for block, x in zip(model.blocks, seen):
        attn = block.attn
        B, T, _ = x.shape
        q, k, _ = attn.qkv(x).view(B, T, 3, attn.n_heads, attn.d_k).permute(2, 0, 3, 1, 4)
        out.append({"q": [[sig(v) for v in row] for row in q[0, 0].tolist()],
                    "k": [[sig(v) for v in row] for row in k[0, 0].tolist()]})
    return out


def export() -> dict:
    raw = data.load_text()
    train, val = (torch.from_numpy(a.copy()) for a in data.split(raw))
    started = time.time()
    with settings(SIZE):
        torch.manual_seed(RUN["seed"])
        kept: list = []
        record = train_one(RUN, SIZE, train, val, keep=kept)
        model = kept[0].eval()
        layers = head_qk(model, TEXT)
    return {
        "text": TEXT,
        "tokens": list(TEXT),
        "d_k": RUN["d_k"],
        "factor": sig(RUN["d_k"] ** -0.5, 6),
        "layers": layers,
        "run": {k: record[k] for k in ("rule", "init", "d_k", "lr", "seed", "steps_done", "final_val_loss",
                                       "diverged", "val_loss")},
        "spec": {k: v for k, v in dataclasses.asdict(SIZE).items() if k in ("n_layers", "n_heads", "seq_len", "batch",
                                                                            "steps", "betas", "weight_decay")},
        "provenance": {"command": " ".join(getattr(sys, "orig_argv", sys.argv)), "git_head": git_head(),
                       "torch": torch.__version__, "wall_seconds": round(time.time() - started, 1)},
        "training_text": data.provenance(raw),
    }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--out", required=True)
    args = p.parse_args(argv)
    out = export()
    with open(args.out, "w", encoding="utf-8") as f:
        json.dump(out, f, separators=(",", ":"))
        f.write("\n")
    print(f"{args.out}: final validation loss {out['run']['final_val_loss']} nats/byte, "
          f"{out['provenance']['wall_seconds']} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
