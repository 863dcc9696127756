"""Tools around the site that are not steps of its build: serving a built site (``python -m tools.serve``, which
`make serve` runs), finding and driving the browser engines the tests and benchmarks use (``tools.engines``), and
ESLint on the browser runtime (``python -m tools.lint_js``, run by `make lint`). Run from the repository's root.
"""
