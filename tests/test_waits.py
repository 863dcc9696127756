"""No test waits with ``wait_for_function`` on a promise (it would pass at once: tests/waits.py says why): the
expressions written in its calls are read from every test file and checked for promise-making code (an
expression kept in a constant is not followed: name such constants ..._JS and keep them synchronous)."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from waits import until

ROOT = Path(__file__).resolve().parent
# a wait's first argument, when it is written in the call (a string literal or an f-string)
WAIT = re.compile(r"wait_for_function\(\s*(f?(\"\"\"|\"|')(.*?)\2)", re.S)
PROMISE = re.compile(r"\.then\(|\basync\b|\bawait\b|caches\.|\bfetch\(|getDirectory|Promise\.")


def test_no_wait_for_function_is_given_a_promise():
    found = []
    for path in sorted(ROOT.rglob("*.py")):
        if path == Path(__file__).resolve():      # its own demonstration below
            continue
        for m in WAIT.finditer(path.read_text()):
            if PROMISE.search(m.group(3)):
                found.append(f"{path.relative_to(ROOT)}:{path.read_text()[:m.start()].count(chr(10)) + 1}")
    assert found == [], f"wait_for_function given a promise (use waits.until): {found}"


@pytest.mark.ui
def test_wait_for_function_does_not_await_a_promise_and_until_does(browser):
    """Why the rule holds: the behaviour itself, in the browser the tests use."""
    page = browser.new_page()
    page.wait_for_function("() => Promise.resolve(false)", timeout=2_000)     # passes: the promise is truthy
    with pytest.raises(AssertionError, match="not within"):
        until(page, "() => Promise.resolve(false)", timeout=0.3)
    assert until(page, "() => new Promise((r) => setTimeout(() => r(7), 50))", timeout=5) == 7
    page.close()
