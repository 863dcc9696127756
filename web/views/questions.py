"""Questions: the common questions about 1/√d_k, each answered with a button into a live view."""
from __future__ import annotations

import panel as pn
import param

from ..state import LabState, TrainingState
from .common import caption, heading

#: (question, answer in Markdown, formula in LaTeX or None, button label, lab preset, training preset)
QUESTIONS = [
    ("What happens without the scaling?",
     "The logits q·k grow with d_k, so the softmax of each row approaches a one-hot vector: one key takes "
     "almost all of the weight. The output ignores the other tokens, and, worse, the softmax stops passing "
     "gradient, because its Jacobian vanishes at a one-hot point.",
     r"\frac{\partial\,\mathrm{softmax}(z)}{\partial z} = \mathrm{diag}(p) - p\,p^{\top} \;\longrightarrow\; 0 \quad\text{as } p \to \text{one-hot}",
     "Show me at d_k = 1024", {"view": "playground", "d_k": 1024, "rule": "sqrt", "n": 16}, None),
    ("Why √d_k and not some other number?",
     "For q and k with independent entries of mean 0 and variance σ², q·k is a sum of d_k independent terms, "
     "each of variance σ⁴. Its variance is d_k σ⁴, so its standard deviation is σ²√d_k. Dividing by √d_k "
     "brings it back to σ², whatever the width of the head.",
     r"\mathrm{Var}(q\cdot k) = \sum_{i=1}^{d_k} \mathrm{Var}(q_i k_i) = d_k\,\sigma^4, \qquad "
     r"\mathrm{Var}\!\left(\frac{q\cdot k}{\sqrt{d_k}}\right) = \sigma^4",
     "Show the variance", {"view": "variance", "d_k": 256}, None),
    ("How does it affect training?",
     "An unscaled head at large d_k starts saturated: its gradients are tiny and noisy, so it learns slowly "
     "or gets stuck attending to the wrong key. With 1/√d_k the same model, with the same data and "
     "initial weights, learns the task quickly.",
     None, "Train both", {"view": "training"}, {"rule_a": "none", "rule_b": "sqrt", "d_k": 1024, "lr": 0.01}),
    ("Can the factor be tuned?",
     "Yes. The factor is an inverse temperature. muP (Yang et al., 2022) uses 1/d_k so that, once q and k "
     "become correlated during training, the logits stay bounded as models get wider; any exponent α in "
     "d_k^-α is available here. QK-norm (Henry et al., 2020) normalises q and k to unit length and divides "
     "the cosine by a temperature τ (often learned), which removes the dependence on d_k altogether.",
     r"\text{scale} = d_k^{-1/2}\ (\text{Vaswani}),\quad d_k^{-1}\ (\mu\text{P}),\quad d_k^{-\alpha},\quad "
     r"\text{QK-norm: } \frac{\cos(q, k)}{\tau}",
     "Compare every rule", {"view": "saturation", "rho": 0.0}, None),
    ("Is it always necessary?",
     "Not at small d_k: at d_k = 4 the unscaled logits are barely larger than the scaled ones. Nor when "
     "something else controls the logits' size: QK-norm, a learned temperature, or an initialisation that "
     "folds 1/√d_k into W_q. What matters is the spread of the logits the softmax sees, not the factor itself.",
     None, "Show me at d_k = 4", {"view": "playground", "d_k": 4, "rule": "sqrt"}, None),
    ("The classic bug: dividing by √d_model instead of √d_k",
     "With d_model = 512 split into 8 heads, each head has d_k = 64 and should divide by 8. Dividing by "
     "√512 ≈ 22.6 makes every logit 2.8 times too small: the attention becomes too flat, as if a temperature "
     "of 2.8 had been added. Here that is the rule d_k^-α with α = ln 22.6 / ln 64 ≈ 0.75.",
     r"\frac{1}{\sqrt{d_{\text{model}}}} = \frac{1}{\sqrt{512}} \approx \frac{1}{22.6} \;\ne\; "
     r"\frac{1}{\sqrt{d_k}} = \frac{1}{8}",
     "Show the bug", {"view": "playground", "d_k": 64, "rule": "alpha", "alpha": 0.75}, None),
    ("Why do half-precision kernels scale before the matmul?",
     "In float16 the largest number is 65504. Computing q·kᵀ first and dividing afterwards can overflow "
     "to inf before the division happens; scaling q first keeps every intermediate small. A stable softmax "
     "(subtract the row maximum) is needed as well, since exp(x) overflows float16 already at x ≈ 11.1.",
     None, "Show the overflow", {"view": "precision", "sigma": 4.0, "rho": 1.0, "order": "after"}, None),
]


class Questions(pn.viewable.Viewer):
    """Question and answer cards; each button moves the page to a view with settings that show the answer."""

    lab = param.ClassSelector(class_=LabState, doc="The shared state.")
    train = param.ClassSelector(class_=TrainingState, doc="The training runs.")

    def _go(self, lab_preset, train_preset):
        def go(_):
            view = lab_preset.get("view")
            rest = {k: v for k, v in lab_preset.items() if k != "view"}
            if rest:
                self.lab.param.update(**rest)
            if train_preset:
                self.train.param.update(**train_preset)
            if view:
                self.lab.view = view
        return go

    def __panel__(self):
        cards = [heading("Questions"),
                 caption("Short answers; each button opens the live view with settings that show the answer.")]
        for question, answer, formula, label, lab_preset, train_preset in QUESTIONS:
            button = pn.widgets.Button(label=f"{label} →", color="primary", variant="outline", width=230)
            button.on_click(self._go(lab_preset, train_preset))
            items = [heading(question, level=3, css_margin="4px 0", margin=(0, 10)),
                     pn.pane.Markdown(answer, disable_math=True, sizing_mode="stretch_width", margin=(0, 10))]
            if formula:
                items.append(pn.pane.LaTeX(f"$${formula}$$", renderer="katex", sizing_mode="stretch_width",
                                           styles={"font-size": "17px", "overflow-x": "auto"}, margin=(0, 10)))
            items.append(button)
            cards.append(pn.Column(*items, sizing_mode="stretch_width", margin=(0, 10, 12, 10),  # aligned with the text
                                   styles={"border-left": "4px solid #0072B2", "background": "#f7f9fc",
                                           "padding": "6px 4px"}))
        return pn.Column(*cards, sizing_mode="stretch_width")
