"""The tour as a reader walks it, under `panel serve` and in the built Pyodide site, at a phone's size: from the
bare URL, "Next step" through every step with a pick at each, "Previous step", the browser's Back and Forward,
and reloads. At every stop the step shown is the one the address names, its pick (when made) is checked,
locked and graded, and no error reaches the page.

Each step opened from its own link worked; the walk did not. On 2026-12-07's build (before 9a7ded6's successor)
a pick on the step after "Next step" from step 4 or 7 raised ``TypeError`` in the worker: Python had taken its
own held change of the choices' labels for the page's (build/templates/sdpa_worker.py
``ignore_own_held_changes``). Picks lived only in the session, so a reload offered a made pick again."""
from __future__ import annotations

import re

import pytest
from playwright.sync_api import Page, expect

from web.options import VIEW_HEADINGS
from web.tour import STEPS, encode_picks
from web.urlstate import HOME_VIEW

pytestmark = pytest.mark.ui

PHONE = {"width": 412, "height": 823}
#: every radio's checked and disabled state in the step card, across shadow roots: [label, checked, disabled]
RADIOS_JS = """() => { const out = [];
  const visit = (root) => { for (const el of root.querySelectorAll('input[type=radio]')) {
      const label = el.closest('label'); out.push([label ? label.textContent.trim() : '', el.checked, el.disabled]); }
    for (const el of root.querySelectorAll('*')) if (el.shadowRoot) visit(el.shadowRoot); };
  visit(document); return out; }"""


def pick_of(i: int) -> int:
    """The walk's pick at step ``i``: not always the first choice, not always the right one."""
    return (i * 2) % len(STEPS[i - 1].choices)


def shown_step(page: Page) -> int:
    text = page.get_by_text(re.compile(r"^Guided tour · step \d+ of")).first.inner_text()
    return int(re.search(r"step (\d+) of", text).group(1))


def address_step(page: Page) -> int:
    return int(page.evaluate("new URLSearchParams(location.search).get('step') || '1'"))


def wait_for_step(page: Page, i: int) -> None:
    """The page shows step ``i`` and the address names it."""
    expect(page.get_by_text(f"Guided tour · step {i} of {len(STEPS)}")).to_be_visible(timeout=90_000)
    page.wait_for_function("(i) => (new URLSearchParams(location.search).get('step') || '1') === String(i)", arg=i,
                           timeout=30_000)


def assert_picked(page: Page, i: int, picked: dict) -> None:
    """Step ``i``'s choices: the pick made there checked, every choice locked, and its feedback shown; none checked
    and all open before a pick."""
    step = STEPS[i - 1]
    if i in picked:
        label = step.choices[picked[i]]
        expect(page.get_by_label(label, exact=True)).to_be_checked(timeout=30_000)
        for choice in step.choices:
            expect(page.get_by_label(choice, exact=True)).to_be_disabled()
        feedback = page.locator("[role=status]").filter(has_text=re.compile(r"^(✓ Right\.|✗ Not quite|You picked)"))
        expect(feedback.first).to_be_visible(timeout=30_000)
    else:
        for choice in step.choices:
            expect(page.get_by_label(choice, exact=True)).not_to_be_checked()
            expect(page.get_by_label(choice, exact=True)).to_be_enabled()
    assert shown_step(page) == address_step(page) == i


def no_error(page: Page, runtime) -> None:
    if runtime.name == "site":
        assert page.evaluate("window.sdpaLab.error") is None


def test_the_tour_walked_from_the_bare_url_with_next_previous_back_and_reload(page: Page, runtime):
    page.set_viewport_size(PHONE)
    runtime.open(page, "")
    # the bare address is the answer, in one screen; the tour is one of its three ways on
    expect(page.get_by_text(VIEW_HEADINGS[HOME_VIEW], exact=True)).to_be_visible(timeout=60_000)
    page.get_by_role("button", name=re.compile("^Take the tour")).click()
    picked: dict[int, int] = {}
    for i in range(1, len(STEPS) + 1):
        wait_for_step(page, i)
        assert_picked(page, i, picked)
        page.get_by_label(STEPS[i - 1].choices[pick_of(i)], exact=True).check()
        picked[i] = pick_of(i)
        assert_picked(page, i, picked)
        # the pick is in the address, so that a reload keeps it
        page.wait_for_function("(p) => new URLSearchParams(location.search).get('picks') === p",
                               arg=encode_picks(picked), timeout=30_000)
        no_error(page, runtime)
        if i < len(STEPS):
            page.get_by_role("button", name="Next step →").click()
    # the recap names every pick
    for i, k in picked.items():
        expect(page.get_by_text(f"you predicted “{STEPS[i - 1].choices[k]}”", exact=False).first).to_be_attached(
            timeout=30_000)
    last = len(STEPS)
    # the browser's Back and Forward: each step pushed an entry, each pick replaced it
    for back in (last - 1, last - 2):
        page.go_back()
        wait_for_step(page, back)
        assert_picked(page, back, picked)
    page.go_forward()
    wait_for_step(page, last - 1)
    assert_picked(page, last - 1, picked)
    # Previous and Next
    page.get_by_role("button", name="← Previous step").click()
    wait_for_step(page, last - 2)
    assert_picked(page, last - 2, picked)
    page.get_by_role("button", name="Next step →").click()
    wait_for_step(page, last - 1)
    assert_picked(page, last - 1, picked)
    # a reload opens the step the address names, with every pick kept and locked, and the recap knows them
    runtime.reload(page)
    wait_for_step(page, last - 1)
    assert_picked(page, last - 1, picked)
    page.get_by_role("button", name="Next step →").click()
    wait_for_step(page, last)
    assert_picked(page, last, picked)
    for i, k in picked.items():
        expect(page.get_by_text(f"you predicted “{STEPS[i - 1].choices[k]}”", exact=False).first).to_be_attached(
            timeout=30_000)
    no_error(page, runtime)
