"""Questions: the common questions about 1/√d_k, each answered with a button into a live view."""
from __future__ import annotations

from dataclasses import dataclass, field
from urllib.parse import urlencode

import panel as pn
import param

import sdpa_core as sc
from sdpa_core.hf_published import PUBLISHED
from sdpa_core.scaling import GEMMA2_CAP, LLAMA4_ATTN_SCALE, LLAMA4_FLOOR_SCALE, llama4_temperature

from .. import real_training
from ..claims import cap_shrink, fmt
from ..state import LabState
from ..training_state import OVER_SEEDS, SEEDS, TrainingState
from ..urlstate import apply_query
from ..options import VIEW_HEADINGS
from .common import caption, heading


_REAL = real_training.spec()
_GEMMA_27B = PUBLISHED["gemma-2-27b"].config   # its published config.json (sdpa_core/hf_published.py)


def _at_least(d_k: int) -> str:
    """'all 12 of 12 seeds' or 'at least 10 of 12 seeds': what OVER_SEEDS claims on any CPU."""
    n = OVER_SEEDS[d_k]["at_least"]
    return f"{n} of {SEEDS}" if n == SEEDS else f"at least {n} of {SEEDS}"

@dataclass(frozen=True)
class Question:
    question: str
    answer: str          # Markdown; every claim holds at the preset's state (tests/web/test_claims.py)
    formula: str | None  # LaTeX
    source: str          # where the claim comes from
    button: str
    preset: dict = field(default_factory=dict)  # a complete link: every other setting goes back to its default


VASWANI = "Vaswani et al. (2017), *Attention Is All You Need*, §3.2.1 and footnote 4"
QUESTIONS = [
    Question(
        "What happens without the scaling?",
        "For independent q and k the logits q·k have standard deviation σ²√d_k, so as d_k grows each row of the "
        "softmax approaches a one-hot vector: one key takes almost all of the weight and the output ignores the "
        "other tokens. A saturated row's softmax Jacobian diag(p) − ppᵀ is nearly 0, so that query gets almost no "
        "gradient. Not every row saturates at once: the rows that still learn get the unscaled factor in the chain "
        "rule, so the gradient becomes sparse and erratic (most rows starved, the total not small) rather than "
        "uniformly small. The verdict above the heatmaps gives the numbers.",
        r"\begin{gathered}p = \mathrm{softmax}(z): \\ \frac{\partial p}{\partial z} = \mathrm{diag}(p) - p\,p^{\top} "
        r"\\ \longrightarrow\; 0 \quad \text{as } p \to \text{one-hot}\end{gathered}",
        VASWANI + ", offered as a hypothesis: “We suspect that for large values of d_k, the dot products grow "
        "large in magnitude, pushing the softmax function into regions where it has extremely small gradients.”",
        "Show me at d_k = 1024", {"view": "playground", "d_k": 1024}),
    Question(
        "Why √d_k and not some other number?",
        "For q and k with independent entries of mean 0 and variance σ², q·k is a sum of d_k independent terms, "
        "each of variance σ⁴. Its variance is d_k σ⁴, so its standard deviation is σ²√d_k. Dividing by √d_k "
        "brings it back to σ², whatever the width of the head. This holds at initialisation (ρ = 0); once q and "
        "k are correlated, q·k also has a mean that grows like d_k.",
        r"\begin{gathered}\mathrm{Var}(q\cdot k) = \sum_{i=1}^{d_k} \mathrm{Var}(q_i k_i) \\ = d_k\,\sigma^4, \quad "
        r"\mathrm{Var}\!\left(\frac{q\cdot k}{\sqrt{d_k}}\right) = \sigma^4\end{gathered}",
        VASWANI + ", for components that are independent random variables with mean 0 and variance 1.",
        "Show the variance", {"view": "variance", "d_k": 256}),
    Question(
        "How does it affect training?",
        "In this page's tiny model, whose q and k entries have variance about 1 at every width, an unscaled head at "
        "large d_k starts saturated: most queries get almost no gradient, so it learns much more slowly than the "
        "same model with 1/√d_k, with the same data and initial weights. Here "
        f"(Adam, learning rate 0.01, loss averaged over steps 280–300), at d_k = 1024 the unscaled run's loss is "
        f"more than twice 1/√d_k's in {_at_least(1024)} seeds (median ratio {OVER_SEEDS[1024]['median_words']}: a "
        "saturated run amplifies round-off, so one seed's curve differs a little between CPUs); at d_k = 16 it is "
        f"still higher in {_at_least(16)} (median ratio {OVER_SEEDS[16]['median_words']}), though both runs are then "
        "about 97% accurate. Press Play and compare the curves; the seed next to the plots picks another run. A "
        "real transformer starts with far smaller logits, and there the cost of no scaling depends on the width "
        "and the learning rate: the next question.",
        None, VASWANI + "; the model and task are this page's own (sdpa_core/model.py).",
        "Train both", {"view": "training", "rule_a": "none", "rule_b": "sqrt", "train_d_k": 1024, "lr": 0.01}),
    Question(
        "Does that hold in a real transformer?",
        "Measured in a small real transformer trained offline on CPython's own source "
        f"({real_training.scope()}: pre-LayerNorm, AdamW with warm-up and cosine decay, the mean of "
        f"{len(_REAL['seeds'])} seeds; experiments/real_transformer). "
        f"{real_training.answer()} The toy above has one head, no LayerNorm and an init that gives q and k "
        "entries of variance about 1 at every width, so its unscaled logits start large even at d_k = 16; a real "
        "head's logits start far smaller.",
        None,
        "Measured by experiments/real_transformer/run.py (its README has a larger GPU table from an outside run); "
        "Dehghani et al. (2023), *Scaling Vision Transformers to 22 Billion Parameters*, and Wortsman et al. "
        "(2023), *Small-scale proxies for large-scale Transformer training instabilities* (attention-logit growth, "
        "QK-norm); Yang et al. (2022), *Tensor Programs V* (muP's 1/d_k and the learning rate).",
        "Show the real transformer", {"view": "real"}),
    Question(
        "Can the factor be tuned?",
        "Yes: the factor is an inverse temperature. muP uses 1/d_k: once q and k become correlated during "
        "training, q·k grows like d_k, and 1/d_k keeps the logits bounded as models get wider (on independent "
        "random vectors it makes attention nearly uniform). Any exponent α in d_k^-α is available here. QK-norm "
        "normalises q and k to unit length and divides the cosine by a temperature τ: every logit is bounded by "
        "1/τ whatever d_k is. With a fixed τ, the cosines of independent random vectors (ρ = 0) shrink like "
        "1/√d_k, so attention flattens as d_k grows; once q and k align (ρ > 0) a query's cosine with its own key "
        "stays near ρ while the others shrink, so QK-norm concentrates on that key instead. τ is learned or tuned. "
        f"{real_training.tuned()} Today's open models add two more dials. Gemma 2 scales by "
        f"1/√query_pre_attn_scalar (1/√d_k in its 9B model; 1/√{_GEMMA_27B['query_pre_attn_scalar']} for 27B's "
        f"d_k = {_GEMMA_27B['head_dim']}) and then caps "
        f"every logit at ±{GEMMA2_CAP:g} with {GEMMA2_CAP:g}·tanh(z/{GEMMA2_CAP:g}): that lowers the spread of normal logits by "
        f"1% once it reaches {fmt(cap_shrink(GEMMA2_CAP, 0.99))}, so at initialisation (spread about 1) it does "
        "nothing, and it bounds the logits that training grows. Llama 4 multiplies the queries of its layers "
        f"without position encoding by 1 + {LLAMA4_ATTN_SCALE:g}·ln(1 + ⌊n/{LLAMA4_FLOOR_SCALE}⌋) at the n-th token: 1 below "
        f"{LLAMA4_FLOOR_SCALE:,} tokens, {fmt(llama4_temperature(65536))} at 65,536, the idea of SSMax's "
        f"{sc.scaling.SSMAX_S:g}·ln n made gentle. Both are rules here, and Real models reads any model's "
        "config.json. The button opens every rule at ρ = 0.5, where 1/√d_k saturates at large d_k and 1/d_k does not.",
        r"\begin{gathered}\text{scale} = d_k^{-1/2}\ (\text{Vaswani}), \\ d_k^{-1}\ (\mu\text{P}),\quad "
        r"d_k^{-\alpha}, \\ \text{QK-norm: } \frac{\cos(q, k)}{\tau}, \\ \text{Gemma 2: } c\tanh(z/c)\end{gathered}",
        "Yang et al. (2022), *Tensor Programs V* (muP, 1/d_k attention); Henry et al. (2020), *Query-Key "
        "Normalization for Transformers*; Dehghani et al. (2023), *Scaling Vision Transformers to 22 Billion "
        "Parameters* (QK-norm against logit growth); Gemma Team (2024), *Gemma 2* (logit soft-capping), as "
        "transformers' models/gemma2/modeling_gemma2.py applies it; Meta's Llama 4 attention temperature, as "
        "transformers' models/llama4/modeling_llama4.py (Llama4TextAttention) applies it; Nakanishi (2025), "
        "*Scalable-Softmax Is Superior for Attention* (SSMax).",
        "Compare every rule", {"view": "saturation", "rho": 0.5}),
    Question(
        "Is it always necessary?",
        "Not at small d_k: at d_k = 4 dividing by √4 = 2 only halves the logits, and neither softmax is close to "
        "one-hot (the playground shows the top weight and tokens attended of both). Nor when something else "
        "controls the logits' size: QK-norm with a suitable temperature, or a learned temperature. T5 divides by "
        "nothing and instead draws W_q with a √d_k smaller std, which gives the same logits at initialisation "
        "only: training then moves them at another rate. Adam's steps do not depend on the gradient's scale, so at "
        "the same learning rate the folded W_q moves the logits about √d_k times faster per step than an explicit "
        "1/√d_k would (under SGD the two differ by d_k), and the learning rate has to absorb that. What matters at "
        f"initialisation is the spread of the logits the softmax sees, not the factor itself. {real_training.necessary()}",
        None,
        "Raffel et al. (2020), *Exploring the Limits of Transfer Learning* (T5). The folding is stated in Hugging "
        "Face transformers, src/transformers/models/t5/modeling_t5.py: T5PreTrainedModel._init_weights draws W_q "
        "with std (d_model · d_kv)^−½ and W_k with std d_model^−½ under the comment “Mesh TensorFlow attention "
        "initialization to avoid scaling before softmax” (pointing to Mesh TensorFlow's "
        "mesh_tensorflow/transformer/attention.py), and T5Attention.forward takes the scores as "
        "torch.matmul(query_states, key_states.transpose(3, 2)), with no factor.",
        "Show me at d_k = 4", {"view": "playground", "d_k": 4}),
    Question(
        "The classic bug: dividing by √d_model instead of √d_k",
        "With d_model = 512 split into 8 heads, each head has d_k = 64 and should divide by 8. Dividing by "
        "√512 ≈ 22.6 makes every logit 2.8 times too small: the same as multiplying the softmax's temperature by "
        "2.8, so attention is flatter than intended. Here that is the rule d_k^-α with α = ln 22.6 / ln 64 ≈ 0.75.",
        r"\begin{gathered}\frac{1}{\sqrt{d_{\text{model}}}} = \frac{1}{\sqrt{512}} \approx \frac{1}{22.6} \\ "
        r"\ne\; \frac{1}{\sqrt{d_k}} = \frac{1}{8}\end{gathered}",
        VASWANI + " (d_model = 512, h = 8, d_k = d_model / h = 64).",
        "Show the bug", {"view": "playground", "d_k": 64, "rule": "alpha", "alpha": 0.75}),
    Question(
        "Where should half-precision kernels apply the scale?",
        "In float16 the largest number is 65504. Computing q·kᵀ in float16 and dividing afterwards can overflow "
        "to inf before the division happens. PyTorch's math path multiplies q and k each by √scale before the "
        "matmul; FlashAttention instead accumulates q·kᵀ in float32 and scales afterwards, where nothing "
        "overflows. A softmax that took exp in float16 would also need the row maximum subtracted first, since "
        "exp(x) overflows float16 already at x ≈ 11.1; real kernels take exp in float32, which overflows only near "
        "x ≈ 88.7, and subtract the maximum anyway.",
        None,
        "PyTorch, `_scaled_dot_product_attention_math` (aten/src/ATen/native/transformers/attention.cpp); "
        "Dao et al. (2022), *FlashAttention*.",
        "Show the overflow", {"view": "precision", "sigma": 4.0, "rho": 1.0, "order": "after"}),
]


def preset_link(q: Question) -> str:
    """The preset as a query string: applying it sets every other setting back to its default."""
    return "?" + urlencode(q.preset)


class Questions(pn.viewable.Viewer):
    """Question and answer cards; each button moves the page to a view with settings that show the answer."""

    lab = param.ClassSelector(class_=LabState, doc="The shared state.")
    train = param.ClassSelector(class_=TrainingState, doc="The training runs.")

    def _go(self, q: Question):
        def go(_):
            # a preset is a whole link (TensorFlow Playground's presets): settings from an earlier button
            # or slider move never leak into it
            apply_query(preset_link(q), self.lab, self.train)
        return go

    def __panel__(self):
        cards = [heading(VIEW_HEADINGS["questions"]),
                 caption("Short answers; each button opens the live view with settings that show the answer "
                         "(every other setting goes back to its default).")]
        for q in QUESTIONS:
            button = pn.widgets.Button(label=f"{q.button} →", color="primary", variant="outline", width=230)
            button.on_click(self._go(q))
            items = [heading(q.question, level=3, css_margin="4px 0", margin=(0, 10)),
                     pn.pane.Markdown(q.answer, disable_math=True, sizing_mode="stretch_width", margin=(0, 10))]
            if q.formula:
                items.append(pn.pane.LaTeX(f"$${q.formula}$$", renderer="katex", sizing_mode="stretch_width",
                                           styles={"font-size": "17px", "overflow-x": "auto"}, margin=(0, 10)))
            items.append(caption(f"Source: {q.source}"))
            items.append(button)
            cards.append(pn.Column(*items, sizing_mode="stretch_width", margin=(0, 10, 12, 10),  # aligned with the text
                                   styles={"border-left": "4px solid #0072B2", "background": "var(--sdpa-card-bg)",
                                           "padding": "6px 4px"}))
        return pn.Column(*cards, sizing_mode="stretch_width")
