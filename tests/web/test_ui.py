"""The page in a real browser (Debian's Chromium) against `panel serve`. Every view's first screen on a phone
is test_ui_layout.py's; on a desktop, with axe-core and the contrast of every text, light and dark, test_ui_dark.py's."""
import re
from pathlib import Path

import pytest
from playwright.sync_api import Page, TimeoutError as PlaywrightTimeout, expect

from web import claims
from web.grading import step_state
from web.options import D_K_OPTIONS, MAX_D_K
from web.state import LabState
from web.tour import STEPS
from web.training_state import TrainingState
from web.urlstate import HOME_VIEW
from web.views.alignment import TICK_MS as SWEEP_TICK_MS
from web.views.training import AHEAD, TICK_MS

pytestmark = pytest.mark.ui


# Values of one column over every ColumnDataSource that has it, read from BokehJS's document.
COLUMN_JS = """(col) => {
  const out = [];
  for (const doc of Bokeh.documents) for (const m of doc.all_models) {
    const data = m.data;
    if (!data || typeof data !== 'object') continue;
    const v = data instanceof Map ? data.get(col) : data[col];
    if (v !== undefined && v !== null && v.length !== undefined) out.push(Array.from(v).map(Number));
  }
  return out;
}"""
READY_JS = "() => window.Bokeh && Bokeh.documents.length > 0 && Bokeh.documents[0].all_models.size > 50"


def open_page(page: Page, url: str, errors: list | None = None):
    if errors is not None:
        page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
        page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(url)
    page.wait_for_function(READY_JS)
    expect(page.locator("h1.sdpa-h1")).to_be_visible()


D_K = '#main .noUi-handle[aria-label="d_k (key/query dimension)"]'   # the slider beside the figure


def choose_view(page: Page, label: str):
    """Pick a view from the View menu (the first select of the page's main area)."""
    page.locator("#main select").first.select_option(label=label)


def column_sum(page: Page, col: str) -> float:
    return sum(sum(x for x in v if x == x) for v in page.evaluate(COLUMN_JS, col))


def column_len(page: Page, col: str) -> int:
    return sum(len(v) for v in page.evaluate(COLUMN_JS, col))


def assert_never_true(page: Page, condition_js: str, arg, *, ms: int):
    """The one bounded negative wait: ``condition_js`` must stay false for ``ms`` milliseconds. Something
    that does *not* happen (a paused stream growing) has no event to wait for, so the browser polls the
    condition for a fixed window; use it only for absences, never as a sleep before a positive check."""
    with pytest.raises(PlaywrightTimeout):
        page.wait_for_function(condition_js, arg=arg, timeout=ms)


def test_page_loads_without_console_errors(page: Page, app_url):
    """The bare address loads the answer (web/urlstate.py HOME_VIEW) with its headline computed here, then the tour's
    first step, whose verdict shows once the prediction is made; no console error on the way."""
    errors = []
    open_page(page, app_url, errors)
    expect(page.get_by_text("SDPA Lab: why attention divides by √d_k")).to_be_visible()
    home = LabState(view=HOME_VIEW)
    expect(page.locator("p.sdpa-headline").first).to_have_text(
        str(claims.answer_headline(home.answer["sweep"], samples=home.answer["samples"])), timeout=30_000)
    page.get_by_role("button", name=re.compile("^Take the tour")).click()
    lab, _ = step_state(STEPS[0])              # the tour's first step, on the playground
    # its headline shows once the reader has predicted (tests/web/test_ui_tour_predict.py: not before)
    expect(page.get_by_text(f"Guided tour · step 1 of {len(STEPS)}")).to_be_visible(timeout=30_000)
    expect(page.locator("p.sdpa-headline").filter(visible=True)).to_have_count(0)
    page.get_by_label(STEPS[0].choices[0], exact=True).check()
    expect(page.locator("p.sdpa-headline").filter(visible=True).first).to_have_text(
        str(claims.headline(lab.playground, n=lab.n, dtype=lab.dtype)))
    expect(page.locator("summary").get_by_text("At d_k = 64, σ = 1, ρ = 0, n = 16 · details")).to_be_visible()
    page.wait_for_function(f"({COLUMN_JS})('w').length >= 2")
    assert errors == []


def test_moving_d_k_changes_the_plots_and_the_url(page: Page, app_url):
    """Pressing → on the d_k slider re-draws the heatmaps and writes d_k into the address."""
    open_page(page, app_url)
    page.wait_for_function(f"({COLUMN_JS})('w').length >= 2")
    before = page.evaluate(COLUMN_JS, "w")
    handle = page.locator(D_K)
    handle.focus()
    handle.press("ArrowRight")
    handle.press("ArrowRight")
    page.wait_for_function("() => location.search.includes('d_k=128')")
    page.wait_for_function(f"(before) => JSON.stringify(({COLUMN_JS})('w')) !== before", arg=str(before).replace(" ", ""))
    assert page.evaluate(COLUMN_JS, "w") != before
    expect(page.locator("#main").get_by_text("d_k (key/query dimension): 128")).to_be_visible()


def test_slider_moves_replace_history_and_view_changes_push(page: Page, app_url):
    """Moving d_k replaces the history entry; a view change adds one, and Back returns to the previous view."""
    open_page(page, f"{app_url}?view=playground")
    page.wait_for_function("() => window.__sdpaHistory === true")
    start = page.evaluate("() => history.length")
    handle = page.locator(D_K)
    handle.focus()
    for value in (96, 128, 192):
        handle.press("ArrowRight")
        page.wait_for_function(f"() => location.search.includes('d_k={value}')")
    assert page.evaluate("() => history.length") == start
    choose_view(page, "Why the variance grows")
    page.wait_for_function("() => location.search.includes('view=variance')")
    expect(page.get_by_text("Why does the spread of q·k grow with d_k?", exact=True)).to_be_visible()
    assert page.evaluate("() => history.length") == start + 1
    page.go_back()
    page.wait_for_function("() => location.search.includes('view=playground') && location.search.includes('d_k=192')")
    expect(page.get_by_text("Playground: what happens to one head's attention as d_k grows?")).to_be_visible()
    expect(page.locator("#main").get_by_text("d_k (key/query dimension): 192")).to_be_visible()
    page.go_forward()
    page.wait_for_function("() => location.search.includes('view=variance')")
    lab = LabState(view="variance", d_k=192)     # the link's state: the defaults, and d_k = 192
    expect(page.get_by_text(claims.variance_headline(lab.dots, d_k=192, rule=lab.rule), exact=True)).to_be_visible()
    assert page.evaluate("() => history.length") == start + 1


def test_a_link_restores_the_view(page: Page, app_url):
    """A link with a query string opens that view with those settings."""
    open_page(page, f"{app_url}?view=saturation&d_k=512&rule=linear&n=8")
    expect(page.get_by_text(re.compile("^Saturation and gradients: which rules"))).to_be_visible()
    expect(page.locator("#main").get_by_text("d_k (key/query dimension): 512")).to_be_visible()
    expect(page.get_by_text(re.compile(r"^At σ = 1, ρ = 0, n = 8 · details"))).to_be_visible()   # the headline's conditions
    expect(page.locator("#main select").nth(1)).to_have_value(re.compile("linear|1/d_k"))   # the rule beside the plots
    assert "Some settings in the link were corrected" not in page.content()


def test_a_hostile_link_shows_the_notice(page: Page, app_url):
    """Negative, NaN, text, markup and repeated values are corrected with a visible notice, never an error."""
    errors, dialogs = [], []
    page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    hostile = ("?d_k=-5&n=1e99&sigma=nan&rho=abc&rule=%3Cimg%20src%3Dx%20onerror%3Dalert(1)%3E"
               "&seed=99999999999999999999&d_k=7&view=%3Cscript%3E")
    open_page(page, app_url + hostile, errors)
    expect(page.get_by_text("Some settings in the link were corrected:")).to_be_visible()
    expect(page.get_by_text(re.compile(rf"d_k: -5 is outside \[1, {MAX_D_K}\]"))).to_be_visible()
    expect(page.locator("#main").get_by_text("d_k (key/query dimension): 1", exact=True)).to_be_visible()
    assert dialogs == [] and errors == []
    page.get_by_role("button", name="Dismiss notice").click()
    expect(page.get_by_text("Some settings in the link were corrected:")).to_be_hidden()


def test_play_grows_the_loss_curve_and_pause_stops_it(page: Page, app_url):
    """Play streams loss points into both curves; Pause stops the stream."""
    open_page(page, f"{app_url}?view=training&train_d_k=64")
    # the view opens with its first AHEAD steps of both runs already drawn (a condition: the default 30 s ran out
    # once in CI beside another engine's test, and 60 s at load average 11, six CPU-bound processes beside the suite)
    page.wait_for_function(f"() => ({COLUMN_JS})('loss').reduce((a, v) => a + v.length, 0) >= {2 * AHEAD}",
                           timeout=150_000)
    ahead = column_len(page, "loss")
    assert ahead == 2 * AHEAD, ahead
    # a moved setting resets both runs, and the first AHEAD steps fill in again a tick at a time (the slider's
    # redraw does not wait for them): first fewer points than before, then exactly as many
    handle = page.locator('#main .noUi-handle[aria-label="d_k of the trained head"]')
    handle.focus()
    handle.press("ArrowRight")
    page.wait_for_function("() => location.search.includes('train_d_k=128')", timeout=30_000)
    page.wait_for_function(f"() => ({COLUMN_JS})('loss').reduce((a, v) => a + v.length, 0) >= {2 * AHEAD}",
                           timeout=60_000)
    assert column_len(page, "loss") == 2 * AHEAD
    page.get_by_role("button", name="▶ Play").click()
    page.wait_for_function(f"() => ({COLUMN_JS})('loss').reduce((a, v) => a + v.length, 0) >= {ahead + 40}")
    page.get_by_role("button", name="❙❙ Pause").click()
    expect(page.get_by_role("button", name="▶ Play")).to_be_visible()
    stopped = column_len(page, "loss")
    # paused: for a dozen animation ticks (each would stream new points) no point arrives
    assert_never_true(page, f"(n) => ({COLUMN_JS})('loss').reduce((a, v) => a + v.length, 0) > n", stopped,
                      ms=12 * TICK_MS)
    expect(page.get_by_text(re.compile(r"Run A \(no scaling\): step \d+"))).to_be_visible()


def test_widgets_of_a_view_opened_later_get_accessible_names(page: Page, app_url):
    """Widgets built after load (a view's first visit) are named, and the d_k handle announces the shown value."""
    open_page(page, app_url)
    page.wait_for_function("() => window.__sdpaA11y === true")
    handle = page.locator(D_K)
    handle.focus()
    handle.press("ArrowRight")
    expect(handle).to_have_attribute("aria-valuetext", "96")
    choose_view(page, "Saturation & gradients")
    # the view is built (and its sweep computed) on its first visit: seconds on a busy machine
    expect(page.locator('.noUi-handle[aria-label="Monte-Carlo samples per d_k"]')).to_have_attribute(
        "aria-valuetext", str(LabState.param.samples.default), timeout=30_000)
    choose_view(page, "Train it")
    expect(page.locator('.noUi-handle[aria-label="d_k of the trained head"]')).to_have_attribute(
        "aria-valuetext", str(TrainingState.param.d_k.default), timeout=30_000)


def test_a_key_press_names_the_new_value_before_a_screen_reader_reads_it(page: Page, app_url):
    """noUiSlider writes its option's index ("12.00") into the handle's aria-valuetext at the key press; the page's
    labelling (web/a11y.py) writes the shown value in the same turn, not in the browser's idle time (where a
    screen reader could read the index first, and Firefox under load once read it, in a test)."""
    open_page(page, app_url)
    page.wait_for_function("() => window.__sdpaA11y === true")
    default = LabState.param.d_k.default
    got = page.locator(D_K).evaluate("""async (handle) => {
        const before = handle.getAttribute('aria-valuetext');
        handle.dispatchEvent(new KeyboardEvent('keydown', {key: 'ArrowRight', bubbles: true}));
        const index = handle.getAttribute('aria-valuenow');
        await Promise.resolve();                       // the labelling's turn: after noUiSlider's, in this task
        return [before, index, handle.getAttribute('aria-valuetext')]; }""")
    at = D_K_OPTIONS.index(default)
    assert got[0] == str(default) and float(got[1]) == at + 1, got      # the index, as noUiSlider counts
    assert got[2] == str(D_K_OPTIONS[at + 1]), got


def nudge_d_k(page: Page, first: bool) -> str | None:
    """A round trip through Python that leaves ρ alone: d_k beside the figure one option up (``first``), then
    back down to its default, waited for until the address Python writes for it has that d_k. Returns the
    address's ρ at that answer."""
    default = LabState.param.d_k.default
    want = str(D_K_OPTIONS[D_K_OPTIONS.index(default) + 1]) if first else None   # the default is not written
    page.locator(D_K).press("ArrowRight" if first else "ArrowLeft")
    page.wait_for_function("(want) => new URLSearchParams(location.search).get('d_k') === want", arg=want,
                           timeout=30_000)
    return page.evaluate("new URLSearchParams(location.search).get('rho')")


def download_runs(page: Page, first: bool) -> str:
    """A round trip through Python that changes nothing: "Download curves as CSV" asks Python for the
    runs' steps so far, and the file arrives with its answer."""
    with page.expect_download(timeout=30_000) as download:
        page.get_by_role("button", name="Download curves as CSV").click()
    return Path(download.value.path()).read_text()


@pytest.mark.parametrize("view, button, period, sentinel", [("alignment", "Play: sweep ρ", SWEEP_TICK_MS, nudge_d_k),
                                                            ("training", "Play", TICK_MS, download_runs)])
def test_nothing_moves_by_itself_with_reduced_motion(page: Page, app_url, view, button, period, sentinel):
    """With prefers-reduced-motion, opening a view with an animation starts none: its Play button still says
    Play and the address keeps the link's values (ρ is not swept; no training step is taken: the runs' steps,
    downloaded from Python, are the same two of the animation's periods apart)."""
    page.emulate_media(reduced_motion="reduce")
    open_page(page, f"{app_url}?view={view}")
    play = page.get_by_role("button", name=re.compile(button)).first
    expect(play).to_be_visible(timeout=60_000)
    search = page.evaluate("location.search")
    page.wait_for_function("() => window.Bokeh && Bokeh.documents.length > 0")
    # The messages between the page and Python keep their order. Once the first sentinel is answered, all
    # the page sent on load has reached Python (an animation started then is ticking); the second one,
    # sent two of the animation's periods later by the page's clock, is answered after the tick that
    # would have moved ρ or taken a training step.
    before = sentinel(page, first=True)
    since = page.evaluate("performance.now()")
    page.wait_for_function("([since, period]) => performance.now() >= since + 2 * period", arg=[since, period])
    after = sentinel(page, first=False)
    assert after == before
    assert page.evaluate("location.search") == search
    expect(play).to_have_text(re.compile(button))
    assert "Pause" not in page.locator("body").inner_text()


def test_phone_starts_with_settings_collapsed_behind_the_menu_button(page: Page, app_url):
    """At 390 px the first screen shows the page, not 1100 px of sliders; the menu button opens them."""
    page.set_viewport_size({"width": 390, "height": 844})
    open_page(page, f"{app_url}?view=playground")
    page.wait_for_selector("canvas")
    sidebar = page.locator("#sidebar")
    expect(sidebar).not_to_have_class(re.compile(r"\bshow\b"))
    expect(page.locator("#sidebar-toggle")).to_have_attribute("aria-expanded", "false")
    page.click("#sidebar-toggle")
    expect(sidebar).to_have_class(re.compile(r"\bshow\b"))


def test_settings_a_view_ignores_are_disabled_with_the_reason(page: Page, app_url):
    """In Train it the sidebar's d_k is disabled and says why; back in the Playground it is live again."""
    open_page(page, f"{app_url}?view=training")
    page.click("#sidebar-toggle")      # the "All settings" drawer
    expect(page.get_by_text("Train it has its own d_k (next to the plots).")).to_be_visible()
    handle = page.locator('#sidebar .noUi-handle[aria-label="d_k (key/query dimension)"]')
    expect(page.locator(".noUi-target[disabled]").first).to_be_attached()
    choose_view(page, "Playground")
    expect(page.get_by_text("Train it has its own d_k (next to the plots).")).to_be_hidden()
    handle.focus()
    handle.press("ArrowRight")
    page.wait_for_function("() => location.search.includes('d_k=96')")


#: Every readouts table on the page, through the shadow roots: its width against its box's.
TABLE_WIDTHS_JS = r"""() => { const out = [];
  (function walk(root) { for (const el of root.querySelectorAll('*')) { if (el.shadowRoot) walk(el.shadowRoot);
    if (el.tagName === 'TABLE' && el.getBoundingClientRect().width > 0) out.push([el.scrollWidth, el.parentElement.clientWidth]); } })(document);
  return out; }"""


@pytest.mark.parametrize("width", [412, 320])
def test_no_readouts_table_is_wider_than_a_phone(page: Page, app_url, width):
    """The dial's settings table and the models' five-column table were cut at 412 px (a sideways scroll inside
    the table); on a phone each fits: headings wrap, and the models' rows stack with each cell named."""
    page.set_viewport_size({"width": width, "height": 823})
    for view in ("dial", "models", "playground"):
        open_page(page, f"{app_url}?view={view}")
        page.wait_for_function(f"() => ({TABLE_WIDTHS_JS})().length > 0", timeout=60_000)
        widths = page.evaluate(TABLE_WIDTHS_JS)
        assert all(w <= box + 1 for w, box in widths), (view, width, widths)
