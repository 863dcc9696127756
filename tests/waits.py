"""Waiting on a condition that the page answers asynchronously (Cache Storage, fetch, the file system).

Playwright's ``wait_for_function`` does not await a promise: an expression that returns one (``caches.open(...)
.then(...)``, an ``async`` function) is truthy at once, so such a wait passes before anything happened. ``until``
polls ``page.evaluate``, which does await it, until the value is truthy or ``timeout`` seconds have passed.
``tests/test_waits.py`` fails on a ``wait_for_function`` given a promise."""
from __future__ import annotations

import time


def until(page, expression: str, arg=None, *, timeout: float = 30.0, every_ms: int = 100, what: str = ""):
    """The first truthy value of ``expression`` (evaluated with ``arg``, its promise awaited), polled."""
    deadline = time.monotonic() + timeout
    while True:
        value = page.evaluate(expression, arg)
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"not within {timeout:g} s: {what or expression[:200]} (last value {value!r})")
        page.wait_for_timeout(every_ms)
