"""The tour's predictions are predictions, and a phone reader sees the step: walking the tour with "Next step",
nothing visible states a step's measured answer before the pick (no headline, no readout, no plot title), a
pick is final (the recap scores it), and at 412 × 823 each step opens at its top with its figure and the
control its "Now try" names on the first screen. Under `panel serve` and in the built Pyodide site."""
from __future__ import annotations

import math
import re

import pytest
from playwright.sync_api import Page, expect

from web.grading import grade, split_feedback
from web.tour import STEPS, answer
from web.urlstate import step_query

from test_ui_tour import FRAMES_JS, state_of

pytestmark = pytest.mark.ui

# Every visible text of the page, through Panel's shadow roots, and every drawn plot's title (canvas text).
VISIBLE_TEXT_JS = """() => {
  const out = [];
  const walk = (root) => {
    for (const el of root.querySelectorAll('*')) {
      if (el.shadowRoot) walk(el.shadowRoot);
      if (!el.checkVisibility || !el.checkVisibility({checkVisibilityCSS: true})) continue;
      for (const node of el.childNodes) if (node.nodeType === 3 && node.textContent.trim()) out.push(node.textContent);
    }
  };
  walk(document);
  const views = []; const visit = (v) => { views.push(v); for (const c of (v.child_views || [])) visit(c); };
  for (const r of Bokeh.index.roots || []) visit(r);
  for (const v of views) {
    if (v.model.type === 'Figure' && v.el.isConnected && v.el.getBoundingClientRect().height > 0 && v.model.title) {
      out.push(v.model.title.text);
    }
  }
  return out.join(' \\n ');
}"""

# the top of each drawn plot (its element's box in the viewport), for the plots of the step's view
PLOT_TOPS_JS = """() => { const views = []; const visit = (v) => { views.push(v); for (const c of (v.child_views || [])) visit(c); };
  for (const r of Bokeh.index.roots || []) visit(r);
  return views.filter((v) => v.model.type === 'Figure' && v.el.isConnected)
              .map((v) => v.el.getBoundingClientRect()).filter((b) => b.width > 50 && b.height > 50).map((b) => b.top); }"""


# how many of the step's drawn plots the reader can see (a plot inside a hidden element is laid out, not shown)
FIGURES_SHOWN_JS = """() => { const views = []; const visit = (v) => { views.push(v); for (const c of (v.child_views || [])) visit(c); };
  for (const r of Bokeh.index.roots || []) visit(r);
  return views.filter((v) => v.model.type === 'Figure' && v.el.isConnected && v.el.getBoundingClientRect().width > 50
                             && v.el.checkVisibility({visibilityProperty: true})).length; }"""


def measured_words(i: int) -> list[str]:
    """How the step's sentence writes the number its prediction is graded on (at the step's own link)."""
    step = STEPS[i - 1]
    lab, train = state_of(step_query(i))
    value, sentence = step.measure(lab, train)
    if value is None or (isinstance(value, float) and math.isnan(value)) or not hasattr(sentence, "facts"):
        return []
    return [sentence.shown[k] for k, v in sentence.facts.items()
            if isinstance(v, (int, float)) and math.isclose(float(v), float(value), rel_tol=1e-9)]


def wait_for_step(page: Page, i: int) -> None:
    expect(page.get_by_text(f"Guided tour · step {i} of {len(STEPS)}")).to_be_visible(timeout=60_000)
    expect(page.get_by_text(STEPS[i - 1].predict)).to_be_visible(timeout=60_000)
    # the step's own view, in its place (hidden until the pick)
    expect(page.locator(f".sdpa-view-{STEPS[i - 1].view}")).to_be_attached(timeout=60_000)
    page.wait_for_function(f"() => {{ const f = ({FRAMES_JS})(); return f.length > 0 && f.every(([t, w, h]) => w > 50 && h > 50); }}",
                           timeout=60_000)


def radios(page: Page, i: int):
    return [page.get_by_label(choice, exact=True) for choice in STEPS[i - 1].choices]


# In both runtimes: the built site once did not reach step 5 after "Next step" at step 4 (a pick there raised in the
# worker; issue 55, build/templates/sdpa_worker.py ignore_own_held_changes).
def test_nothing_on_the_page_gives_the_answer_away_and_a_pick_is_final(page: Page, runtime):
    page.set_viewport_size({"width": 1280, "height": 900})
    runtime.open(page, step_query(1))
    picks = {}
    for i, step in enumerate(STEPS, 1):
        wait_for_step(page, i)
        shown = page.evaluate(VISIBLE_TEXT_JS)
        for own in (step.question, step.predict, *step.choices):   # the card's own words may name a range's end
            shown = shown.replace(own, "")
        for words in measured_words(i):
            assert words not in shown, f"step {i}: the answer {words!r} is on the page before the pick"
        assert page.locator(".sdpa-headline").filter(visible=True).count() == 0, f"step {i}: a headline shows"
        # nor does the figure: the step's view keeps its place, hidden, until the pick
        assert page.evaluate(f"() => ({PLOT_TOPS_JS})().length") > 0
        assert page.evaluate(f"() => ({FIGURES_SHOWN_JS})()") == 0, f"step {i}: a figure shows before the pick"
        lab, train = state_of(step_query(i))
        right, sentence = answer(step, lab, train)
        pick = 0 if right is None else (right + 1) % len(step.choices)
        radios(page, i)[pick].check()
        picks[i] = pick
        if right is None:
            expect(page.get_by_text(re.compile(re.escape(step.waiting)))).to_be_visible(timeout=60_000)
        else:
            shown, more = split_feedback("✗ " + grade(step, pick, lab, train)[1])   # the rest behind "details"
            expect(page.get_by_text(shown, exact=True)).to_be_visible(timeout=60_000)
            if more:
                expect(page.get_by_text(more, exact=True)).to_be_attached()
        page.wait_for_function(f"() => ({FIGURES_SHOWN_JS})() > 0", timeout=30_000)   # the figure, once picked
        for radio in radios(page, i):          # final: no choice can be changed, and nothing offers to
            expect(radio).to_be_disabled()
        assert page.get_by_role("button", name="Try again").count() == 0
        if i < len(STEPS):
            page.get_by_role("button", name="Next step →").click()
    # the recap scores each first pick
    for i, pick in picks.items():
        expect(page.get_by_text(re.compile(rf"^{i}\. .*you predicted “{re.escape(STEPS[i - 1].choices[pick])}”"))
               ).to_be_visible(timeout=30_000)
    # back at step 1 from the step list: the pick is still there, still final
    page.get_by_label("Go to step").select_option(label=f"1. {STEPS[0].title}")
    wait_for_step(page, 1)
    expect(radios(page, 1)[picks[1]]).to_be_checked()
    for radio in radios(page, 1):
        expect(radio).to_be_disabled()


def control_named(page: Page, name: str):
    for locate in (lambda: page.get_by_role("slider", name=name), lambda: page.get_by_role("button", name=name),
                   lambda: page.get_by_role("spinbutton", name=name), lambda: page.get_by_label(name, exact=True),
                   lambda: page.get_by_text(name, exact=True)):
        found = locate().filter(visible=True)
        if found.count():
            return found.first
    raise AssertionError(f"no visible control named {name!r}")


@pytest.mark.parametrize("runtime", ["panel serve"], indirect=True)
def test_on_a_phone_each_step_opens_at_its_top_with_its_figure_and_control(browser, runtime):
    """412 × 823 with touch: after "Next step" the step's card is at the top of the screen, and once the reader has
    picked, the step's first plot and the control its "Now try" names are on that first screen (the control whole)."""
    context = browser.new_context(viewport={"width": 412, "height": 823}, has_touch=True)
    page = context.new_page()
    try:
        runtime.open(page, step_query(1))
        wait_for_step(page, 1)
        for i in range(2, len(STEPS) + 1):
            page.get_by_role("button", name="Next step →").tap()
            wait_for_step(page, i)
            title = page.get_by_text(f"Guided tour · step {i} of {len(STEPS)}").bounding_box()
            assert title is not None and -1 <= title["y"] <= 60, f"step {i} opens with its title at {title}"
            radios(page, i)[0].tap()          # the pick scrolls its choices to the top, the feedback below them
            expect(radios(page, i)[0]).to_be_disabled(timeout=30_000)
            page.wait_for_function(f"() => ({FIGURES_SHOWN_JS})() > 0", timeout=30_000)
            feedback = page.locator("[role=status]").filter(has_text=re.compile(r"^(✓|✗|You picked)")).first
            box = feedback.bounding_box()
            assert box is not None and 0 <= box["y"] and box["y"] + box["height"] <= 823, f"step {i}: feedback at {box}"
            tops = page.evaluate(PLOT_TOPS_JS)
            assert tops and min(tops) < 823, f"step {i}: its first plot starts at {min(tops) if tops else None}"
            box = control_named(page, STEPS[i - 1].control).bounding_box()
            assert box is not None and box["y"] >= 0 and box["y"] + box["height"] <= 823, (
                f"step {i}: {STEPS[i - 1].control!r} is at {box}, off the first screen")
    finally:
        context.close()
