"""The explorable layout on a phone, in a real browser (`panel serve`): each view opens at 412 x 823 and is
then narrowed to 320 x 640 (the phone layout is chosen by the same media query at both widths, and Bokeh and
Panel lay out again on a resize: a page load per view saved). At each width its question and first figure
are on the first screen, the control beside that figure directly under it, no text box crosses the screen's
edge, nothing is wider than the screen and the whole page scrolls (tests/web/layout.py). The same first-screen
check at a desktop's 1280 x 900 runs in test_ui_dark.py's every-view test, on the page it opens anyway.
With SDPA_SCREENSHOTS=1 (`make screenshots`) screenshots of each view at each width, light and dark, go to
artifacts/screenshots/layout/ for a person to look at: the first screen and the whole page (`-full`)."""
import pytest
from layout import layout_problems
from playwright.sync_api import Page, expect

from web.options import VIEWS
from web.theme import DARK, LIGHT

pytestmark = pytest.mark.ui

PHONES = [(412, 823), (320, 640)]
BODY = {scheme: "rgb({}, {}, {})".format(*(int(colours["--sdpa-bg"][i:i + 2], 16) for i in (1, 3, 5)))
        for scheme, colours in (("light", LIGHT), ("dark", DARK))}


def test_question_figure_and_control_share_a_phones_first_screen(page: Page, app_url, shots):
    problems = []
    for view in VIEWS:
        for n, (width, height) in enumerate(PHONES):
            page.set_viewport_size({"width": width, "height": height})
            if n == 0:
                page.goto(f"{app_url}?view={view}")
                expect(page.locator("h1.sdpa-h1")).to_be_visible(timeout=60_000)
                if view == "tour":      # the step's view is covered until the reader's pick: pick, then it shows
                    page.get_by_role("radio").first.check()
                if view != "questions":
                    page.locator("canvas").first.wait_for(timeout=60_000)
                else:
                    page.locator("#main h2").first.wait_for(timeout=60_000)
            else:
                page.evaluate("() => window.scrollTo(0, 0)")
            problems += layout_problems(page, view, (width, height))
            if shots.on:
                problems += screenshots(page, view, width, height, shots)
    assert problems == []


def screenshots(page: Page, view: str, width: int, height: int, shots) -> list[str]:
    """The view light and dark, its first screen and its whole page (its background checked on the way)."""
    problems = []
    for scheme in ("light", "dark"):
        page.emulate_media(color_scheme=scheme)
        # the plots take the scheme's colours in the browser (web/dark_figures.py)
        page.wait_for_function("(s) => document.documentElement.dataset.sdpaFigures === s", arg=scheme)
        body = page.evaluate("() => getComputedStyle(document.body).backgroundColor")
        if body != BODY[scheme]:
            problems.append(f"{view}: the page's background in {scheme} is {body}, not {BODY[scheme]}")
        shots.take(page, f"layout/{view}-{width}x{height}-{scheme}.png")
        shots.take(page, f"layout/{view}-{width}x{height}-{scheme}-full.png", full_page=True)
    page.emulate_media(color_scheme="light")
    return problems
