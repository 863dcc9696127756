"""A small decoder-only transformer whose rule for scaling q.k is a parameter.

Token embedding + learned positions, pre-LayerNorm blocks (causal multi-head self-attention, then an MLP
of width 4 * d_model), a final LayerNorm and an untied linear head. d_model = n_heads * d_k.

The attention is written out, softmax(q k^T * factor + causal mask) v, so that the logits going into the
softmax can be measured. Rules (RULES):

- ``none``: factor 1
- ``sqrt``: factor 1/sqrt(d_k) (the transformer's rule)
- ``linear``: factor 1/d_k
- ``qknorm``: each head's q and k pass through a LayerNorm over their d_k entries (one LayerNorm for q and
  one for k per layer, shared by the layer's heads, with learned gain and bias), then factor 1/sqrt(d_k)

Inits (INITS):

- ``gpt2``: every Linear and Embedding weight ~ N(0, 0.02^2), biases 0
- ``fanin``: every Linear and Embedding weight ~ N(0, 1/fan_in), biases 0, where fan_in is what
  torch.nn.init computes for the weight: a Linear's in_features, an Embedding's embedding_dim

LayerNorms start at gain 1, bias 0 under both.

Measured per layer on a forward pass with ``stats=True`` (over the batch and heads, in float32):

- ``std``: standard deviation of the scaled logits q.k * factor at the valid (causal) positions
- ``max``: the largest |q.k * factor| at the valid positions
- ``sat``: share of attention rows whose largest weight exceeds 0.99, counting only rows that see at
  least 2 keys (row 0 sees only itself and always has weight 1, so it is left out)
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

RULES = ("none", "sqrt", "linear", "qknorm")
INITS = ("gpt2", "fanin")
SATURATED = 0.99


def factor(rule: str, d_k: int) -> float:
    """The number q.k is multiplied by before the softmax."""
    if rule == "none":
        return 1.0
    if rule in ("sqrt", "qknorm"):
        return 1.0 / math.sqrt(d_k)
    if rule == "linear":
        return 1.0 / d_k
    raise ValueError(f"unknown rule {rule!r}; one of {RULES}")


@dataclass(frozen=True)
class Config:
    rule: str = "sqrt"
    init: str = "gpt2"
    d_k: int = 16
    n_heads: int = 1
    n_layers: int = 2
    seq_len: int = 64
    vocab: int = 256

    @property
    def d_model(self) -> int:
        return self.n_heads * self.d_k


class Attention(nn.Module):
    def __init__(self, cfg: Config):
        super().__init__()
        if cfg.rule not in RULES:
            raise ValueError(f"unknown rule {cfg.rule!r}; one of {RULES}")
        self.rule, self.n_heads, self.d_k = cfg.rule, cfg.n_heads, cfg.d_k
        self.factor = factor(cfg.rule, cfg.d_k)
        self.qkv = nn.Linear(cfg.d_model, 3 * cfg.d_model)
        self.proj = nn.Linear(cfg.d_model, cfg.d_model)
        if cfg.rule == "qknorm":
            self.q_norm, self.k_norm = nn.LayerNorm(cfg.d_k), nn.LayerNorm(cfg.d_k)
        mask = torch.tril(torch.ones(cfg.seq_len, cfg.seq_len, dtype=torch.bool))
        self.register_buffer("mask", mask, persistent=False)
        self.last_logits: torch.Tensor | None = None     # kept only when forward(keep=True)

    def logits(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """(scaled logits (B, H, T, T) before the mask, values (B, H, T, d_k))."""
        B, T, _ = x.shape
        q, k, v = self.qkv(x).view(B, T, 3, self.n_heads, self.d_k).permute(2, 0, 3, 1, 4)
        if self.rule == "qknorm":
            q, k = self.q_norm(q), self.k_norm(k)
        return (q @ k.transpose(-2, -1)) * self.factor, v

    def forward(self, x: torch.Tensor, stats: bool = False, keep: bool = False):
        B, T, C = x.shape
        s, v = self.logits(x)
        mask = self.mask[:T, :T]
        w = torch.softmax(s.masked_fill(~mask, float("-inf")), dim=-1)
        y = (w @ v).transpose(1, 2).reshape(B, T, C)
        if keep:
            self.last_logits = s.detach()
        measured = None
        if stats:
            with torch.no_grad():
                valid = s.detach().float()[..., mask]          # (B, H, n_valid)
                top = w.detach().float().amax(dim=-1)[..., 1:]  # rows 1..T-1 see >= 2 keys
                measured = {"std": valid.std().item(), "max": valid.abs().max().item(),
                            "sat": (top > SATURATED).float().mean().item()}
        return self.proj(y), measured


class Block(nn.Module):
    def __init__(self, cfg: Config):
        super().__init__()
        self.ln1, self.ln2 = nn.LayerNorm(cfg.d_model), nn.LayerNorm(cfg.d_model)
        self.attn = Attention(cfg)
        self.mlp = nn.Sequential(nn.Linear(cfg.d_model, 4 * cfg.d_model), nn.GELU(),
                                 nn.Linear(4 * cfg.d_model, cfg.d_model))

    def forward(self, x, stats=False, keep=False):
        a, measured = self.attn(self.ln1(x), stats=stats, keep=keep)
        x = x + a
        return x + self.mlp(self.ln2(x)), measured


class Transformer(nn.Module):
    def __init__(self, cfg: Config):
        super().__init__()
        if cfg.init not in INITS:
            raise ValueError(f"unknown init {cfg.init!r}; one of {INITS}")
        self.cfg = cfg
        self.tok = nn.Embedding(cfg.vocab, cfg.d_model)
        self.pos = nn.Embedding(cfg.seq_len, cfg.d_model)
        self.blocks = nn.ModuleList(Block(cfg) for _ in range(cfg.n_layers))
        self.ln_f = nn.LayerNorm(cfg.d_model)
        self.head = nn.Linear(cfg.d_model, cfg.vocab, bias=False)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        for m in self.modules():
            if isinstance(m, (nn.Linear, nn.Embedding)):
                if self.cfg.init == "gpt2":
                    std = 0.02
                else:
                    fan_in, _ = nn.init._calculate_fan_in_and_fan_out(m.weight)
                    std = 1.0 / math.sqrt(fan_in)
                nn.init.normal_(m.weight, 0.0, std)
                if getattr(m, "bias", None) is not None:
                    nn.init.zeros_(m.bias)
            elif isinstance(m, nn.LayerNorm):
                nn.init.ones_(m.weight)
                nn.init.zeros_(m.bias)

    def forward(self, idx: torch.Tensor, stats: bool = False, keep: bool = False):
        """Logits (B, T, vocab) and, with stats=True, a list of per-layer {std, max, sat} (else None)."""
        T = idx.shape[1]
        x = self.tok(idx) + self.pos(torch.arange(T, device=idx.device))
        measured = []
        for block in self.blocks:
            x, m = block(x, stats=stats, keep=keep)
            measured.append(m)
        return self.head(self.ln_f(x)), (measured if stats else None)

    def loss(self, idx: torch.Tensor, targets: torch.Tensor, stats: bool = False):
        logits, measured = self(idx, stats=stats)
        return F.cross_entropy(logits.float().reshape(-1, logits.shape[-1]), targets.reshape(-1)), measured


def param_groups(model: nn.Module, weight_decay: float) -> list[dict]:
    """Weight decay on matrices (Linear and Embedding weights), none on biases and LayerNorm gains."""
    decay = [p for p in model.parameters() if p.dim() >= 2]
    rest = [p for p in model.parameters() if p.dim() < 2]
    return [{"params": decay, "weight_decay": weight_decay}, {"params": rest, "weight_decay": 0.0}]
