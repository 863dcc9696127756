"""The guided tour and embed mode in a browser, under `panel serve` and in the built Pyodide site: every
step opens from its link, its prediction gives the feedback computed here in CPython, the steps are
reachable by keyboard, and ``?embed=1`` shows one view without the page's chrome."""
from __future__ import annotations

import re

import pytest
from playwright.sync_api import Page, expect

from web.state import LabState
from web.grading import split_feedback
from web.tour import STEPS, answer
from web.training_state import TrainingState
from web.urlstate import apply_query, step_query


pytestmark = pytest.mark.ui


def state_of(search: str) -> tuple[LabState, TrainingState]:
    lab = LabState()
    train = TrainingState(lab)
    apply_query(search, lab, train)
    return lab, train


# every drawn figure's plotting frame (width, height): a figure laid out at 0 x 0 shows only its legend
FRAMES_JS = """() => { const views = []; const visit = (v) => { views.push(v); for (const c of (v.child_views || [])) visit(c); };
  for (const r of Bokeh.index.roots || []) visit(r);
  return views.filter((v) => v.model.type === 'Figure' && v.frame).map((v) => [v.model.title.text, v.frame.bbox.width,
                                                                             v.frame.bbox.height]); }"""


def test_every_step_renders_from_its_link_and_answers_the_prediction(page: Page, runtime, shots):
    """Each ``?view=tour&step=N`` shows step N with its live view; picking the measured answer says
    "Right." with the number and locks the choices (training: "Press Play" until it has run).
    Each pass takes every step in turn, so each width runs once: a phone's under `panel serve` (nothing wider
    than the screen), a desktop's in the built site, which needs a Pyodide distribution (without one, the
    desktop's tour is the layout test's first step). With SDPA_SCREENSHOTS=1 (`make screenshots`) a
    screenshot of every step goes to artifacts/screenshots/, at both widths under `panel serve`."""
    widths = {"serve": [390] + ([1280] if shots.on else []), "site": [1280]}[runtime.name]
    for width in widths:
        every_step(page, runtime, shots, width)


def every_step(page: Page, runtime, shots, width: int):
    page.set_viewport_size({"width": width, "height": 1800 if width > 500 else 844})
    for i, step in enumerate(STEPS, 1):
        link = step_query(i)
        runtime.open(page, link)
        expect(page.get_by_text(f"Guided tour · step {i} of {len(STEPS)}")).to_be_visible(timeout=60_000)
        expect(page.get_by_text(step.predict)).to_be_visible()
        lab, train = state_of(link)
        right, sentence = answer(step, lab, train)
        if right is None:
            page.get_by_label(step.choices[0]).check()
            expect(page.get_by_text(re.compile(re.escape(step.waiting)))).to_be_visible(timeout=30_000)
        else:
            page.get_by_label(step.choices[right]).check()
            shown, more = split_feedback("✓ Right. " + sentence)   # the rest behind "details"
            expect(page.get_by_text(shown, exact=True)).to_be_visible(timeout=60_000)
            if more:
                expect(page.get_by_text(more, exact=True)).to_be_attached()
            # a pick is final (the wrong pick's feedback: tests/web/test_ui_tour_predict.py)
            expect(page.get_by_label(step.choices[(right + 1) % len(step.choices)])).to_be_disabled()
        # the step's view inside the tour lays its plots out as on its own (a bare figure next to a row of
        # figures once collapsed that row to 0 x 0 there)
        page.wait_for_function(f"() => ({FRAMES_JS})().every(([t, w, h]) => w > 50 && h > 50)", timeout=30_000)
        if width < 500:
            overflow = page.evaluate("() => document.documentElement.scrollWidth")
            assert overflow <= width + 2, f"step {i} is {overflow}px wide at {width}px"
        shots.take(page, f"tour-{i}-{width}-{runtime.name}.png", full_page=True)


def test_steps_are_reachable_by_keyboard_and_the_tour_can_be_left(page: Page, runtime):
    """Tab reaches "Next step →", Enter opens step 2 (address and title follow); "Leave the tour here"
    opens that step's view with the same settings."""
    runtime.open(page, step_query(1))
    button = page.get_by_role("button", name="Next step →")
    for _ in range(200):   # Tab through the page until the button has focus
        page.keyboard.press("Tab")
        if page.evaluate("() => { let a = document.activeElement; while (a && a.shadowRoot && a.shadowRoot.activeElement)"
                         " a = a.shadowRoot.activeElement; return a ? a.textContent : ''; }").strip() == "Next step →":
            break
    else:
        pytest.fail("Tab never reached the Next step button")
    page.keyboard.press("Enter")
    page.wait_for_function("() => location.search.includes('step=2')", timeout=30_000)
    expect(page.get_by_text(f"Guided tour · step 2 of {len(STEPS)}")).to_be_visible()
    expect(button).to_be_visible()
    page.get_by_role("button", name=re.compile("Leave the tour here")).click()
    page.wait_for_function("() => location.search.startsWith('?view=variance') && location.search.includes('d_k=256')",
                           timeout=30_000)


@pytest.mark.parametrize("size", [(640, 480), (390, 640)])
def test_embed_mode_shows_one_view_without_the_page_chrome(page: Page, runtime, shots, size):
    """``?embed=1`` hides the header bar, the sidebar, the intro and the navigation, keeps the view and a link
    out, and nothing scrolls sideways; the Share button shows the link and an <iframe> snippet."""
    page.set_viewport_size({"width": size[0], "height": size[1]})
    runtime.open(page, "?view=dial&embed=1&s=4")
    expect(page.get_by_text("The logit dial: how does the logits' spread decide how peaked attention is?")).to_be_visible(
        timeout=60_000)
    expect(page.get_by_role("link", name="Open in SDPA Lab ↗")).to_be_visible(timeout=30_000)
    for chrome in ("#header", "#sidebar"):
        expect(page.locator(chrome)).to_be_hidden()
    expect(page.locator("h1.sdpa-h1")).to_be_hidden()
    expect(page.locator("#main select").first).to_be_hidden()   # the View menu
    assert page.evaluate("() => document.documentElement.scrollWidth") <= size[0] + 2
    page.get_by_role("button", name="Share").last.click()
    snippet = page.get_by_label("Link and embed code (copied)").last
    expect(snippet).to_have_value(re.compile(r"<iframe src=\"[^\"]*embed=true[^\"]*\""), timeout=30_000)
    value = snippet.input_value()
    assert "view=dial" in value and value.split("\n")[0].find("embed") == -1   # the link opens the full page
    shots.take(page, f"embed-{size[0]}x{size[1]}-{runtime.name}.png")


#: Rectangles of the first screen's figures (canvases) and of the boot panel, through the shadow roots.
RECTS_JS = r"""() => {
  const canvases = [];
  (function walk(root) { for (const el of root.querySelectorAll('*')) {
    if (el.shadowRoot) walk(el.shadowRoot);
    if (el.tagName === 'CANVAS') { const r = el.getBoundingClientRect(); if (r.width > 50) canvases.push([r.top, r.bottom, r.left, r.right]); }
  } })(document);
  const boot = document.getElementById('sdpa-boot');
  const b = boot && getComputedStyle(boot).display !== 'none' ? boot.getBoundingClientRect() : null;
  return {canvases, boot: b && [b.top, b.bottom, b.left, b.right]};
}"""


def test_an_embed_of_700_by_450_shows_the_link_out_the_figure_and_its_control(page: Page, runtime):
    """A course page's 700 x 450 frame: the link to the full page on the first line, then the view's question, its
    headline, and its first figure and the d_k slider that moves it, all whole inside the frame without
    scrolling; while the built site boots, its notice is one line along the bottom edge that covers no figure.
    A tour step's embed shows its card beside its view: the step's first figure whole in the frame too."""
    page.set_viewport_size({"width": 700, "height": 450})
    page.goto(runtime.url + "?view=playground&embed=1")
    if runtime.name == "site":
        page.wait_for_function(f"() => {{ const r = ({RECTS_JS})(); return r.boot && r.canvases.length >= 2; }}",
                               timeout=120_000)
        rects = page.evaluate(RECTS_JS)
        top, bottom = rects["boot"][0], rects["boot"][1]
        assert bottom - top < 40 and bottom >= 449, rects["boot"]
        assert all(c[1] <= top or c[0] >= bottom for c in rects["canvases"] if c[0] < 450), rects
    runtime.open(page, "?view=playground&embed=1")
    link = page.get_by_role("link", name="Open in SDPA Lab ↗")
    expect(link).to_be_visible(timeout=30_000)
    assert link.bounding_box()["y"] < 30
    handle = page.locator('#main .noUi-handle[aria-label="d_k (key/query dimension)"]').first
    expect(handle).to_be_visible(timeout=30_000)
    box = handle.bounding_box()
    assert box["y"] + box["height"] <= 450, box
    first = min(page.evaluate(RECTS_JS)["canvases"])
    assert first[1] <= 450, first
    headline = page.get_by_text(re.compile(r"^Without scaling, the top key takes")).first
    expect(headline).to_be_visible(timeout=30_000)
    said = headline.bounding_box()
    assert said["y"] + said["height"] <= first[0], (said, first)       # above the figure it is about
    assert page.evaluate("() => scrollY") == 0

    runtime.open(page, step_query(4) + "&embed=1")
    expect(page.get_by_text(STEPS[3].title, exact=True)).to_be_visible(timeout=60_000)
    page.wait_for_function(f"() => ({RECTS_JS})().canvases.length >= 1", timeout=60_000)
    first = min(page.evaluate(RECTS_JS)["canvases"])
    assert first[0] < 120 and first[1] <= 450, first
    assert page.evaluate("() => scrollY") == 0
    # after the pick, however long the feedback: "Next step" and the control "Now try" names inside the frame
    # (issue 55: step 4's d_k slider and Next, step 7's order buttons were outside it)
    for i, control in ((4, page.locator('#main .noUi-handle[aria-label="d_k (key/query dimension)"]').first),
                       (7, page.get_by_role("button", name="scale q before the matmul"))):
        if i != 4:
            runtime.open(page, step_query(i) + "&embed=1")
        expect(page.get_by_label(STEPS[i - 1].choices[0], exact=True)).to_be_visible(timeout=60_000)
        page.get_by_label(STEPS[i - 1].choices[0], exact=True).check()
        expect(page.locator("[role=status]").filter(has_text=re.compile(r"^(✓ Right\.|✗ Not quite)")).first
               ).to_be_visible(timeout=60_000)
        for name, target in (("Next step", page.get_by_role("button", name="Next step →")), ("control", control)):
            expect(target).to_be_visible(timeout=30_000)
            box = target.bounding_box()
            assert box["y"] >= 0 and box["y"] + box["height"] <= 450, (i, name, box)


def test_play_sweeps_rho_as_q_and_k_align(page: Page, runtime):
    """The alignment view's Play moves ρ up step by step (the address follows) and its sentence with it;
    Pause stops it."""
    runtime.open(page, "?view=alignment&d_k=256")
    expect(page.get_by_text(re.compile(r"^At ρ = 0, 1/√d_k attends to about"))).to_be_visible(timeout=60_000)
    expect(page.get_by_text("At d_k = 256, σ = 1, n = 16", exact=False).first).to_be_visible()
    page.get_by_role("button", name=re.compile("Play: sweep ρ")).click()
    page.wait_for_function("() => /rho=0\\.[1-9]/.test(location.search)", timeout=30_000)
    expect(page.get_by_text(re.compile(r"^At ρ = 0\.[1-9]\d*, 1/√d_k attends to about"))).to_be_visible(timeout=30_000)
    page.get_by_role("button", name=re.compile("Pause")).click()
    expect(page.get_by_role("button", name=re.compile("Play: sweep ρ"))).to_be_visible(timeout=30_000)


def test_the_last_step_recaps_the_predictions_and_grades_the_self_check(page: Page, runtime):
    """On the last step, a revealed prediction appears in "What you found" with its ✓ or ✗, and each self-check
    question, once answered, says "Right." or "Not quite" with the number measured at its own settings."""
    last = len(STEPS)
    runtime.open(page, step_query(last))
    expect(page.get_by_role("heading", name="What you found")).to_be_visible(timeout=60_000)
    step = STEPS[last - 1]
    lab, train = state_of(step_query(last))
    right, _ = answer(step, lab, train)
    page.get_by_label(step.choices[right]).check()
    expect(page.get_by_text(f"you predicted “{step.choices[right]}” ✓.", exact=False)).to_be_visible(timeout=60_000)
    from web.grading import step_state
    from web.tour import SELF_CHECK
    for check in SELF_CHECK:
        good, sentence = answer(check, *step_state(check))
        page.get_by_role("radio", name=check.choices[good], exact=True).check()
        expect(page.get_by_text("✓ Right. " + sentence, exact=True)).to_be_visible(timeout=60_000)
