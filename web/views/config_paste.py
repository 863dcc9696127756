"""The Real models view's config.json section: paste or drop a model's config (or start from a published one),
read in the tab, and see the head it sets: each field read and what it does, the factor on q·k, and the head at
initialisation. Nothing is uploaded: the text goes to ``sdpa_core.hf_config`` in this tab's Python."""
from __future__ import annotations

import html
import json

import panel as pn
import param

from sdpa_core import hf_config, hf_published

from ..claims import VARIANT_LABELS, fmt, pct
from ..claims import config_headline, factor_sentence, softcap_sentence, temperature_sentence
from ..state import LabState
from ..theme import CSS, VERDICT_STYLES
from .common import ANSWER, caption, held

#: The published configs' menu: label -> key ("" for none).
STARTS = {"Pick a published config…": ""} | {p.label: k for k, p in hf_published.PUBLISHED.items()}
COLUMNS = ("logit std", "top weight", "tokens attended")


def _value(v) -> str:
    """A field's value as JSON, a whole float without its ".0" (144, not 144.0)."""
    return str(int(v)) if isinstance(v, float) and v.is_integer() else json.dumps(v)


class ConfigPaste(pn.viewable.Viewer):
    """A text box, a file drop and a menu of published configs in; the head the config sets out."""

    lab = param.ClassSelector(class_=LabState, doc="The shared state.")

    def __init__(self, **params):
        super().__init__(**params)
        self.start = pn.widgets.Select(label="Start from a published config", options=STARTS, width=260)
        self.text = pn.widgets.TextAreaInput(
            label="config.json", placeholder='Paste a config.json here, e.g. {"model_type": "llama", '
            '"hidden_size": 4096, "num_attention_heads": 32, ...}', height=150, sizing_mode="stretch_width",
            max_length=hf_config.MAX_CONFIG_BYTES)
        self.file = pn.widgets.FileInput(accept=".json,application/json", multiple=False, label="or drop the file",
                                         width=260)
        self.read = pn.widgets.Button(label="Read it", color="primary", width=110)
        self.status = pn.pane.HTML("", css_classes=ANSWER, styles=VERDICT_STYLES, sizing_mode="stretch_width",
                                   margin=(4, 10))
        self.headline = pn.pane.HTML("", css_classes=ANSWER, styles=VERDICT_STYLES, sizing_mode="stretch_width",
                                     margin=(4, 10))
        self.result = pn.pane.HTML("", css_classes=ANSWER, sizing_mode="stretch_width", margin=(0, 10),
                                   stylesheets=[CSS])
        self.start.param.watch(self._start, "value")
        self.read.on_click(lambda _: self._read(self.text.value))
        self.file.param.watch(self._dropped, "value")
        self.lab.param.watch(self._update, ["config_model"])
        self._read_as: str | None = None    # the link form of what the box last read or showed
        self.lab.param.watch(self._follow, ["hf_config"])
        self._follow()
        self._update()

    def _follow(self, *_) -> None:
        """Show the fields of the head the state holds (opened from a link, or Back/Forward to another), unless
        the box was last read as that head: a reader's whole pasted config is not cut to its fields."""
        if self.lab.hf_config != self._read_as:
            self._read_as = self.lab.hf_config
            self.text.value = json.dumps(json.loads(self.lab.hf_config), indent=1) if self.lab.hf_config else ""

    def _start(self, event) -> None:
        if event.new:
            self.text.value = json.dumps(hf_published.PUBLISHED[event.new].config, indent=1)
            self._read(self.text.value)

    def _dropped(self, event) -> None:
        data = event.new
        if data is None:
            return
        if not len(data):
            self._say("The dropped file is empty: is it the config.json?")
            return
        try:
            config = hf_config.parse_config(data)   # the size and the encoding are checked before anything else
        except hf_config.ConfigError as e:
            self._say(str(e))
            return
        self.text.value = json.dumps(config, indent=1)
        self._read(self.text.value)

    def _say(self, message: str) -> None:
        """An error, said beside the box; the head shown (and the link) stay as they were."""
        # .object, not set_html: a button's callback runs outside the document lock under `panel serve`, and only
        # Panel's own path defers the change until the lock is held
        kept = " The head shown below is unchanged." if self.lab.hf_config else ""
        self.status.object = f"<div role='alert'>{html.escape(message)}{kept}</div>"

    def _read(self, text: str) -> None:
        if len(text) >= self.text.max_length:
            # the box keeps at most max_length characters: a longer paste was cut there, and is not the reader's file
            self._say(f"The box holds at most {self.text.max_length:,} characters and the paste filled it, so it was "
                      "cut there. A config.json is a few kB: paste only it, or drop the file.")
            return
        try:
            head = hf_config.read_config(hf_config.parse_config(text))
        except hf_config.ConfigError as e:
            self._say(str(e))
            return
        self.status.object = ""
        self._read_as = hf_config.to_link(head)
        self.lab.hf_config = self._read_as

    @held
    def _update(self, *_):
        m = self.lab.config_model
        if m is None:
            self.result.object = self.headline.object = ""
            return
        if "error" in m:
            self.headline.object = f"<div role='status'>{html.escape(m['error'])}</div>"
            self.result.object = ""
            return
        h: hf_config.ConfigHead = m["head"]
        # a list, not a table: a field's meaning is a sentence, which a phone's narrow stacked table cuts off
        fields = "".join(
            f"<dt style='margin-top:6px'><code>{html.escape(f.name)}</code> = {html.escape(_value(f.value))}"
            f"{'' if f.given else ' (not in the file: the default)'}</dt>"
            f"<dd style='margin:0 0 0 1.2em' class='sdpa-meaning'>{html.escape(f.meaning)}</dd>" for f in h.fields)
        variants = "".join(
            f"<tr><th scope='row'>{html.escape(VARIANT_LABELS[v])}<div class='sdpa-meaning'>× {m['factors'][v]:.3g}"
            f"{' then soft-cap' if v == 'model' and h.softcap else ''}</div></th>"
            + "".join(f"<td data-label='{c}'>{x}</td>" for c, x in zip(COLUMNS, (
                fmt(m["theory"][v]), pct(m["mc"][v]["top_weight"]), f"{m['mc'][v]['tokens_attended']:.1f}")))
            + "</tr>" for v in ("model", "unscaled", "sqrt_d_k"))
        self.headline.object = f"<div role='status'>{html.escape(config_headline(m))}</div>"
        sentences = [factor_sentence(h), softcap_sentence(m), temperature_sentence(m), *h.notes]
        ignored = (f"<p class='sdpa-meaning'>Not read by the page: "
                   f"{html.escape(', '.join(h.ignored[:12]))}{' and %d more' % (len(h.ignored) - 12) if len(h.ignored) > 12 else ''}.</p>"
                   if h.ignored else "")
        self.result.object = (
            "".join(f"<p>{html.escape(s)}</p>" for s in sentences if s)
            + f"<div style='overflow-x:auto'><table class='sdpa-readouts sdpa-stack'><caption>{html.escape(h.architecture)}"
            f": d_model {h.d_model}, {h.heads} heads, d_k {h.d_k}, over {m['n']} tokens, mean of {m['samples']} random "
            f"heads</caption><tr><th scope='col'>scaling</th>" + "".join(f"<th scope='col'>{c}</th>" for c in COLUMNS)
            + f"</tr>{variants}</table></div>"
            + f"<p style='margin-bottom:0'>The fields read, as <code>{html.escape(h.source)}</code> reads them:</p>"
            f"<dl style='margin-top:0'>{fields}</dl>" + ignored)

    def __panel__(self):
        return pn.Column(
            pn.pane.HTML("<h3>Your model's config.json</h3>", margin=(12, 10, 0, 10)),
            caption("Paste a Hugging Face config.json, drop the file, or start from a published one. It is read "
                    "here, in this tab: nothing is uploaded. The page reads the fields that set one head's scale, as "
                    "the model's own attention code does, and draws that head at initialisation (W_q, W_k ~ "
                    "N(0, initializer_range²), tokens of rms 1 per feature as after the block's RMSNorm)."),
            self.start,
            self.text,
            pn.FlexBox(self.read, self.file, align_items="end"),
            self.status,
            self.headline,
            self.result,
            sizing_mode="stretch_width")
