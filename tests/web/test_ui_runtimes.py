"""One browser suite, two runtimes: under `panel serve` and in the built Pyodide site, a shared link, a
slider move and every question button leave a page whose verdict, readouts and heatmaps are those of
its state, computed here in CPython."""
from __future__ import annotations

import math
import re
from urllib.parse import parse_qsl

import numpy as np
import pytest
from playwright.sync_api import Page, expect

from web.state import LabState
from web.training_state import TrainingState
from web.urlstate import apply_query, to_query
from web.views.playground import _cell
from web.views.questions import QUESTIONS, preset_link
from web.claims import readout_rows, headline, split_verdict

pytestmark = pytest.mark.ui

# every element's text across shadow roots (Panel renders each pane in its own)
READOUTS_JS = """() => {
  const out = [];
  const visit = (root) => {
    for (const t of root.querySelectorAll('table.sdpa-readouts'))
      out.push(Array.from(t.tBodies[0] ? t.tBodies[0].rows : t.rows).slice(1).map(
        (r) => Array.from(r.querySelectorAll('td'), (c) => c.textContent)));
    for (const el of root.querySelectorAll('*')) if (el.shadowRoot) visit(el.shadowRoot);
  };
  visit(document);
  return out;
}"""
WEIGHTS_JS = """() => {
  const doc = Bokeh.documents[Bokeh.documents.length - 1];
  const out = [];
  for (const m of doc.all_models) {
    const data = m.data;
    if (!data || typeof data !== 'object') continue;
    const w = data instanceof Map ? data.get('w') : data.w;
    if (w && w.length) out.push(Array.from(w, Number).reduce((a, x) => a + (x === x ? x : 0), 0));
  }
  return out.sort((a, b) => a - b);
}"""
LINKS = ["?d_k=4096&sigma=4&rho=1&dtype=float16", "?d_k=1024&rho=0.5", "?d_k=16&causal=true&rule=qknorm&temperature=0.3&n=12",
         "?d_k=64&rule=alpha&alpha=0.75&seed=7",
         # today's rules: Gemma 2's cap where σ = 4 makes it bite, Llama 4's temperature (1/√d_k below 8192 keys)
         "?d_k=64&sigma=4&rho=0.5&rule=softcap", "?d_k=256&n=64&rule=llama4"]


def state_of(search: str) -> tuple[LabState, TrainingState]:
    lab = LabState()
    train = TrainingState(lab)
    apply_query(search, lab, train)
    return lab, train


def assert_page_shows(page: Page, lab: LabState):
    """The verdict, every readout cell and both heatmaps' weights are those of ``lab``."""
    expect(page.locator("p.sdpa-headline").first).to_have_text(
        headline(lab.playground, n=lab.n, dtype=lab.dtype), timeout=30_000)
    weights, gradient = split_verdict(lab.verdict)
    for part in filter(None, (weights, gradient)):      # behind the headline's "details"
        expect(page.get_by_text(part, exact=True)).to_be_attached(timeout=30_000)
    want = [[_cell(key, lab.playground[side]["stats"], lab.n) for side in ("none", "rule")]
            for _, key, _ in readout_rows(lab.n, lab.causal, lab.dtype)]
    got = page.evaluate(READOUTS_JS)
    assert got and got[0] == want, (got, want)
    sums = sorted(float(np.nansum(lab.playground[s]["weights"])) for s in ("none", "rule"))
    shown = page.evaluate(WEIGHTS_JS)
    assert len(shown) == 2 and all(math.isclose(a, b, rel_tol=1e-6, abs_tol=1e-6) for a, b in zip(shown, sums)), (shown, sums)


@pytest.mark.parametrize("link", LINKS)
def test_a_shared_link_shows_the_verdict_readouts_and_plots_of_its_state(page: Page, runtime, link):
    """Opening a shared link shows that state's verdict (not the default's), its readouts and its heatmaps."""
    runtime.open(page, link)
    lab, _ = state_of(link)
    assert_page_shows(page, lab)


def test_a_slider_move_updates_verdict_readouts_and_plots_together(page: Page, runtime):
    """After an arrow-key step of d_k, the verdict, readouts and heatmaps describe the new d_k."""
    runtime.open(page, "?view=playground&d_k=256&rho=0.25")
    handle = page.locator('#main .noUi-handle[aria-label="d_k (key/query dimension)"]')
    handle.focus()
    handle.press("ArrowRight")
    page.wait_for_function("() => location.search.includes('d_k=384')", timeout=30_000)
    lab, _ = state_of("?view=playground&d_k=384&rho=0.25")
    assert_page_shows(page, lab)


def test_each_question_button_sets_exactly_its_preset(page: Page, runtime):
    """Each question's button, clicked after other settings moved, leaves exactly its preset in the address
    (every other setting at its default), and the page follows it."""
    runtime.open(page, "?view=questions&d_k=3&sigma=4&rho=1&rule=qknorm&causal=true&seed=9&lr=1")
    for q in QUESTIONS:
        lab, train = state_of(preset_link(q))
        want = to_query(lab, train)
        page.get_by_role("button", name=f"{q.button} →").click()
        page.wait_for_function("(want) => location.search === want", arg=want, timeout=30_000)
        assert dict(parse_qsl(page.evaluate("location.search")[1:])) == dict(parse_qsl(want[1:]))
        if lab.view == "playground":
            expect(page.locator("p.sdpa-headline").first).to_have_text(
                headline(lab.playground, n=lab.n, dtype=lab.dtype), timeout=30_000)
        page.locator("#main select").first.select_option(label="Questions")   # the View menu
        page.wait_for_function("() => location.search.includes('view=questions')", timeout=30_000)


def test_a_corrected_link_is_written_back_to_the_address(page: Page, runtime):
    """Hostile values are clamped with a notice, and the address then holds the corrected state."""
    runtime.open(page, "?d_k=-5&n=999999999&sigma=abc")
    expect(page.get_by_text("Some settings in the link were corrected:")).to_be_visible(timeout=30_000)
    lab, train = state_of("?d_k=1&n=64")
    page.wait_for_function("(want) => location.search === want", arg=to_query(lab, train), timeout=30_000)
    assert re.search(r"n=999|d_k=-5|sigma=abc", page.evaluate("location.search")) is None


def test_a_link_too_long_for_any_parser_still_applies_what_it_can(page: Page, runtime):
    """A 4301-digit value (Panel's own parser raises on it), hundreds of '&' and more pairs than the page
    reads give notices, the valid settings of the link still apply, and the address is normalized.
    (Under `panel serve`, tornado answers 400 to 1000 or more '&' before any app code runs.)"""
    runtime.open(page, "?d_k=128&" + "&" * 300 + "seed=" + "9" * 4301 + "&rho=0.5&" + "zz=1&" * 80)
    expect(page.get_by_text("Some settings in the link were corrected:")).to_be_visible(timeout=30_000)
    expect(page.get_by_text(re.compile(r"seed: the value was too long"))).to_be_visible()
    expect(page.get_by_text(re.compile(r"settings; the rest were ignored|longer than 2000 characters"))).to_be_visible()
    lab, train = state_of("?d_k=128&rho=0.5")
    page.wait_for_function("(want) => location.search === want", arg=to_query(lab, train), timeout=30_000)
    assert_page_shows(page, lab)


#: The element focused now, through the shadow roots; its name, as a screen reader would read it (an explicit
#: label, a <label>, its text or value), and whether a focus ring is drawn around it.
FOCUSED_JS = r"""() => {
  let el = document.activeElement;
  while (el && el.shadowRoot && el.shadowRoot.activeElement) el = el.shadowRoot.activeElement;
  if (!el || el === document.body) return null;
  const cs = getComputedStyle(el);
  const labelled = el.getAttribute('aria-labelledby');
  const name = (el.getAttribute('aria-label') || (labelled && el.getRootNode().getElementById(labelled)?.textContent)
                || el.getAttribute('title') || (el.labels && el.labels[0] && el.labels[0].textContent)
                || el.textContent || el.value || '').trim();
  return {tag: el.tagName, cls: String(el.className).slice(0, 60), name: name.slice(0, 60),
          ring: cs.outlineStyle !== 'none' && parseFloat(cs.outlineWidth) >= 1};
}"""
#: Every element with role="figure", through the shadow roots: its label.
FIGURES_JS = r"""() => {
  const out = [];
  (function walk(root) { for (const el of root.querySelectorAll('*')) {
    if (el.shadowRoot) walk(el.shadowRoot);
    if (el.getAttribute('role') === 'figure') out.push(el.getAttribute('aria-label') || '');
  } })(document);
  return out;
}"""


@pytest.mark.parametrize("view", ["training", "playground"])
def test_every_tab_stop_has_a_name_and_a_ring_and_every_plot_is_a_named_figure(page: Page, runtime, view):
    """Tab through the whole view (Train it had unnamed Tab stops, the plots' event layers, and buttons that drew
    no focus ring): each stop is named and shows a ring. Each plot is a figure whose label says its title."""
    runtime.open(page, f"?view={view}")
    page.wait_for_function("() => window.__sdpaA11y === true", timeout=30_000)
    page.wait_for_function(f"() => ({FIGURES_JS})().length >= 2", timeout=30_000)
    labels = page.evaluate(FIGURES_JS)
    assert all(len(label) > 10 for label in labels), labels
    page.keyboard.press("Tab")
    first = page.evaluate(FOCUSED_JS)
    stops, problems = [first], []
    for _ in range(120):          # until focus comes round to the first stop again
        page.keyboard.press("Tab")
        now = page.evaluate(FOCUSED_JS)
        if now == first or now is None:
            break
        stops.append(now)
    else:
        problems.append("the tab order never came round")
    problems += [s for s in stops if s and (not s["name"] or not s["ring"])]
    assert len(stops) > 10 and problems == [], problems


def test_a_config_link_shows_its_head_and_a_bad_paste_is_said_and_changes_nothing(page: Page, runtime):
    """A link carrying a config's fields shows that head's headline (computed here in CPython); a published
    config picked from the menu replaces it and its link; a config that is not JSON is said beside the box,
    and the head and the address stay."""
    from urllib.parse import urlencode

    from sdpa_core import hf_config, hf_published
    from web.claims import config_headline

    gemma = hf_config.to_link(hf_config.read_config(hf_published.PUBLISHED["gemma-2-27b"].config))
    link = "?" + urlencode({"view": "models", "config": gemma})
    runtime.open(page, link)
    lab, _ = state_of(link)
    expect(page.get_by_text(config_headline(lab.config_model))).to_be_visible(timeout=60_000)
    page.locator("select").filter(has_text="Pick a published config").select_option(label="Llama 3.1 8B")
    lab, train = state_of("?" + urlencode({"view": "models", "config": hf_config.to_link(
        hf_config.read_config(hf_published.PUBLISHED["llama-3.1-8b"].config))}))
    page.wait_for_function("(want) => location.search === want", arg=to_query(lab, train), timeout=60_000)
    expect(page.get_by_text(config_headline(lab.config_model))).to_be_visible(timeout=60_000)
    page.locator("textarea[placeholder*='Paste']").fill('{"model_type": "llama", "hidden_size": 40')
    page.get_by_role("button", name="Read it").click()
    expect(page.get_by_role("alert").filter(has_text="Not valid JSON")).to_be_visible(timeout=60_000)
    assert page.evaluate("location.search") == to_query(lab, train)
    expect(page.get_by_text(config_headline(lab.config_model))).to_be_visible()
