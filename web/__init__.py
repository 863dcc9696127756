"""SDPA Lab, the page: a Panel app that answers every sqrt(d_k) question live, with numbers from sdpa_core.

``web/app.py`` is the entry point (``panel serve web/app.py``; converted unchanged for Pyodide).
State lives in :mod:`web.state` (no widgets), the query string in :mod:`web.urlstate`, and each
view of the page in one module of :mod:`web.views`.
"""
