"""Stand-in for nh3 in the SDPA Lab page (no sanitiser is shipped).

Panel calls nh3.clean() on ReactiveHTML and Markdown text. Everything this page
renders is its own trusted text, so clean() returns it unchanged. Do not reuse
this stub for a page that shows user-supplied HTML.
"""


def clean(html, **kwargs):
    return html
