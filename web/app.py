"""SDPA Lab: the page's entry point.

``panel serve web/app.py`` serves it; the site build converts this same file for Pyodide (a Web
Worker). Nothing here needs a server: no threads, files or network. ``.servable()`` is guarded so
tests can import this module without serving anything.
"""
import os
import sys

import panel as pn

try:
    from web.page import create_app
    from web.views.common import one_model_walk
except ImportError:  # `panel serve web/app.py` from a checkout: make the repository root importable
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    from web.page import create_app
    from web.views.common import one_model_walk

# KaTeX for the formulas ships inside Panel's dist (self-hostable, no CDN); the text is our own,
# so the HTML sanitiser (which would import nh3) stays off: Markdown/HTML panes default to
# sanitize_html=False in Panel 1.9.4, and nothing here turns it on.
pn.extension("katex", sizing_mode="stretch_width", notifications=False, loading_indicator=False)

if pn.state.served or __name__ == "__main__":  # __main__ is the Pyodide worker
    # Each root the template adds would make Bokeh walk the document's whole model graph again (about 11
    # walks of ~2,500 models); frozen, it walks it once, at the end. The same models and ids either way.
    with one_model_walk():
        create_app().servable(title="SDPA Lab")
