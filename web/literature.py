"""What large training runs measured about attention logits: the published results the Real transformer view
sets its small grid beside (issue 56). Each finding is the source's own statement with its conditions and where in
the source it is, so a reader can check it; the page adds nothing to them.

Plain data (no Panel): views/real.py renders it, tests/web/test_literature.py checks each entry is whole.
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Finding:
    """One published result: ``said`` in the page's words, true to ``where`` in ``source`` (``url``), under
    ``conditions``; ``grid`` names what of the page's own grid it is the large-scale version of."""

    source: str
    where: str
    url: str
    said: str
    conditions: str
    grid: str


FINDINGS: tuple[Finding, ...] = (
    Finding(
        source="Dehghani et al. 2023, Scaling Vision Transformers to 22 Billion Parameters",
        where="§2, QK normalization",
        url="https://arxiv.org/abs/2302.05442",
        said="With 1/√d_k alone, training diverged after a few thousand steps: the attention logits grew so large "
             "that the weights became almost one-hot, with near-zero entropy. LayerNorm on q and k before the "
             "product removed it.",
        conditions="Vision Transformers of around 8B parameters",
        grid="the saturated rings and the logits' growth",
    ),
    Finding(
        source="Wortsman et al. 2023, Small-scale proxies for large-scale Transformer training instabilities",
        where="§3.1.1 and Figure 2",
        url="https://arxiv.org/abs/2309.14322",
        said="The same attention-logit growth appears in small models at high learning rates. It comes from q and "
             "k growing, not from their alignment. Without qk-layernorm the learning rate at which models diverge "
             "falls as they grow; with it, a 1.2B model trains at learning rate 0.3.",
        conditions="decoder-only language models on C4, 1/√d scaling, AdamW, 100,000 steps",
        grid="1/√d_k's working range shrinking with width, and QK-norm's staying wide",
    ),
    Finding(
        source="Wortsman et al. 2023",
        where="§3.2.4",
        url="https://arxiv.org/abs/2309.14322",
        said="Removing the square root from the scaling factor does not remove the need for qk-layernorm.",
        conditions="the same models and schedule",
        grid="1/d_k's rows against QK-norm's",
    ),
    Finding(
        source="OLMo 2 (Team OLMo 2025)",
        where="§2.1",
        url="https://arxiv.org/abs/2501.00656",
        said="Normalising q and k with RMSNorm before the attention avoids attention logits being too large, "
             "which can lead to training-loss divergence.",
        conditions="the OLMo 2 language models",
        grid="QK-norm",
    ),
    Finding(
        source="Gemma 2 (Gemma Team 2024)",
        where="§2",
        url="https://arxiv.org/abs/2408.00118",
        said="Every attention logit is capped at ±50 with 50·tanh(z / 50).",
        conditions="the Gemma 2 models",
        grid="the soft cap of the Real models view",
    ),
    Finding(
        source="Gemma 3 (Gemma Team 2025)",
        where="§2",
        url="https://arxiv.org/abs/2503.19786",
        said="Gemma 2's soft cap was replaced with QK-norm.",
        conditions="the Gemma 3 models",
        grid="QK-norm",
    ),
)
