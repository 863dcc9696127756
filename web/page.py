"""Assemble the page: template, intro, view navigation, the notice, and the two-way URL mirror."""
from __future__ import annotations

import html
import importlib
import os
import sys
from urllib.parse import parse_qsl, urlencode

import panel as pn
import param
from bokeh.models import CustomJS

from . import a11y, dark_figures
from .loop import go_live
from .options import STATIC_SITE_ENV, VIEW_REGISTRY
from .panel_internals import server_request, stop_location_parser
from .state import VIEW_LABELS, VIEWS, LabState
from .training_state import TrainingState
from .tour import STEPS
from .theme import CSS, HEADER_BG, NOTICE_STYLES, PHONE, TEMPLATE_CSS
from .urlstate import KEYS, apply_query, bound_search, install_history, mark_correction, to_query
from .views.common import caption, lay_out_later, one_model_walk, shared_controls
from .views.tour import install_step_scroll

TITLE = "SDPA Lab: why attention divides by √d_k"
SHORT_TITLE = "SDPA Lab"
#: The page's summary for search engines, link previews and the web manifest (read by the site build).
DESCRIPTION = ("Why transformer attention divides q·k by √d_k, shown with live numbers in your browser: "
               "attention maps, softmax saturation, gradients, training and half precision. "
               "Nothing installed, nothing uploaded.")

#: The page's one-line introduction (its <h1>), with the rest behind "About this page": the reader who
#: follows a link to a view sees that view first, on a phone as on a desktop.
INTRO = """
<div class="sdpa-intro">
<h1 class="sdpa-h1">Why attention divides q·k by √d<sub>k</sub></h1>
<details class="sdpa-about"><summary>About this page: every number is computed live in your tab</summary>
<p>Transformer attention computes <b>softmax(q·k / √d<sub>k</sub>)</b>, where d<sub>k</sub> is the width of each
query and key. Every plot is computed in this tab from random queries and keys, a small training run, or a
floating-point experiment, and changes as you move the controls beside it.</p>
<p>New here? The <b>Guided tour</b> takes %(steps)d steps: predict, then see the numbers. Or pick a view from the
<b>View</b> menu: the <b>Playground</b> and the <b>Logit dial</b> first, the <b>Questions</b> for short answers.
<b>☰ All settings</b> holds every setting; those a view does not use are greyed out, with the reason. Every setting
is kept in the page's address, so a copied link (or <b>Share</b>) opens exactly what you see.</p>
</details>
</div>
""" % {"steps": len(STEPS)}


def view_class(name: str) -> type:
    """The class of a view (web/options.py VIEW_REGISTRY), imported from web/views/<name>.py when first needed."""
    _, cls = VIEW_REGISTRY[name]
    return getattr(importlib.import_module(f".views.{name}", __package__), cls)


class Page(param.Parameterized):
    """The whole page for one session: state, views (built on first visit), notice and URL mirror."""

    notices = param.List(default=[], doc="Corrections made to the link's settings, shown until dismissed.")

    def __init__(self, search: str | None = None, **params):
        super().__init__(**params)
        self.lab = LabState()
        self.train = TrainingState(self.lab)
        self._views = {}
        self._last_search = None
        self.notice = pn.pane.HTML("", styles=NOTICE_STYLES, visible=False, sizing_mode="stretch_width",
                                   margin=(4, 10))
        self.dismiss = pn.widgets.Button(label="Dismiss notice", color="light", visible=False, width=140)
        self.dismiss.on_click(lambda e: setattr(self, "notices", []))
        self.nav = pn.widgets.Select.from_param(
            self.lab.param.view, name="View", options={VIEW_LABELS[v]: v for v in VIEWS}, width=210,
            margin=(0, 10, 4, 10), description=None)
        self.content = pn.Column(sizing_mode="stretch_width", min_height=600)
        self.open_full = pn.pane.HTML("", height=24, margin=(0, 10), sizing_mode="stretch_width", stylesheets=[CSS])  # embed mode's link out
        self.lab.param.watch(self._show_view, ["view"])
        if search:
            self.apply_search(search)
        else:    # the bare address opens the answer (urlstate.HOME_VIEW); nothing to correct, so the address is left
            apply_query("", self.lab, self.train)
        self._show_view()
        self.lab.param.watch(self._push_url, [name for o, name, _ in KEYS.values() if o == "lab"])
        self.train.param.watch(self._push_url, [name for o, name, _ in KEYS.values() if o == "train"])

    # ---- URL --------------------------------------------------------------------------------------
    _correcting = False   # True while a link is applied: the address it leads to replaces the link's

    def apply_search(self, search: str) -> None:
        """Set the state from a query string; bad values become notices, never exceptions. The address
        then shows the corrected state, in place of the link (the history entry is replaced, not pushed)."""
        self._last_search = search
        self._correcting = True
        try:
            try:
                self.notices = apply_query(search, self.lab, self.train)
            except Exception as exc:  # the parser clamps everything; this is the last line of defence
                self.notices = [f"The link's settings could not be applied ({type(exc).__name__}); defaults are used."]
            self._push_url()  # the address shows the corrected state, under `panel serve` as in the site
        finally:
            self._correcting = False

    @param.depends("notices", watch=True)
    def _show_notices(self):
        if self.notices:
            items = "".join(f"<li>{n}</li>" for n in self.notices)  # each notice is built from escaped text
            self.notice.object = (f"<div role='status'><b>Some settings in the link were corrected:</b>"
                                  f"<ul style='margin:2px 0'>{items}</ul></div>")
        self.notice.visible = self.dismiss.visible = bool(self.notices)

    def current_search(self) -> str:
        q = to_query(self.lab, self.train)
        return "" if q == "?" else q

    def _push_url(self, *_):
        loc = pn.state.location
        search = self.current_search()
        self._last_search = search
        if loc is not None and loc.search != search:
            if self._correcting:     # set while apply_query moves the state, or by apply_search itself
                mark_correction(loc, search)
            loc.search = search
        self._update_open_full()

    def _on_location(self, event):
        """The browser's address changed (first sync in Pyodide, or the back button): follow it."""
        if event.new != self._last_search and event.new != self.current_search():
            self.apply_search(event.new)

    def connect_location(self):
        loc = pn.state.location
        if loc is None:
            return
        # Panel's address parser is off (the browser sends its address right after the page loads): the page
        # parses the address itself, bounded
        stop_location_parser(loc)
        if loc.search and loc.search != self._last_search:
            self.apply_search(loc.search)
        loc.param.watch(self._on_location, ["search"])

    # ---- views ------------------------------------------------------------------------------------
    def view(self, name: str):
        """The view's section, laid out once on first use and then kept: the tour shows the same objects.
        (A Viewer lays itself out again at every showing, and each layout made new widgets watching the
        shared state: 8 more watchers and about 260 more Bokeh models per round of the views.)"""
        if name not in self._views:
            cls = view_class(name)
            params = {"lab": self.lab, "train": self.train, "view_for": self.view}
            layout = cls(**{k: v for k, v in params.items() if k in cls.param}).__panel__()
            layout.css_classes = [*(layout.css_classes or []), f"sdpa-view-{name}"]   # which view is shown, for tests
            self._views[name] = layout
        return self._views[name]

    def _show_view(self, *_):
        if self.lab.shown != "training" and self.train.running:
            self.train.running = False  # no animation runs off-screen
        if self.lab.shown != "alignment" and self.lab.playing:
            self.lab.playing = False
        new = self.view(self.lab.view)
        lay_out_later(new)
        with one_model_walk():
            if self.content.objects and self.content.objects[0] is not new:
                # the tour shows the other views' objects inside itself: take the old view off the page
                # before the new one goes on, so Panel's clean-up of the old never reaches the new one's models
                self.content.objects = []
            self.content.objects = [new]

    # ---- template ---------------------------------------------------------------------------------
    def share_controls(self) -> pn.Row:
        """"Share": copies the link, and shows it with an <iframe> snippet of the current view, in the
        browser alone (no round trip to Python, so it works the same offline and in both runtimes)."""
        snippet = pn.widgets.TextAreaInput(label="Link and embed code (copied)", visible=False, rows=4,
                                           sizing_mode="stretch_width", max_length=5000,
                                           styles={"flex": "1 1 300px"})
        button = pn.widgets.Button(label="Share", color="primary", variant="outline", width=90)
        button.js_on_click(args={"snippet": snippet}, code=SHARE_JS)
        return pn.FlexBox(button, snippet, sizing_mode="stretch_width", margin=(4, 0), align_items="end",
                          styles={"flex": "0 1 120px"})

    def template(self):
        """The page's template. ``?embed=1`` (``lab.embed``, which in Pyodide arrives after the template is
        built) hides the intro, the navigation and the footer here, and EMBED_JS hides the template's header
        bar and sidebar; a line above the view links to the full page, one under it shares the embed code."""
        controls = shared_controls(self.lab, self.train)
        # one compact row: the page's one-line intro, the view menu and Share (the view comes right after)
        self.header = pn.FlexBox(
            pn.pane.HTML(INTRO, margin=(0, 10), stylesheets=[CSS], sizing_mode="stretch_width",
                         styles={"flex": "1 1 420px"}),
            self.nav, self.share_controls(),
            sizing_mode="stretch_width", align_items="end", css_classes=["sdpa-chrome"])
        self.footer = caption("All numbers come from the `sdpa_core` numpy library in this repository. Colours: "
                              "Okabe-Ito for rules and dtypes (colour-blind safe, with distinct dash patterns), viridis "
                              "for weights." + (" [Third-party software and licences](./notices.html)."
                                                if static_site() else ""))
        self.footer = pn.Column(self.footer, sizing_mode="stretch_width", css_classes=["sdpa-chrome"])
        # embedded: the link out first, on the frame's first line (a reader of a course page sees where the view
        # comes from before any scroll); Share after the view
        self.embed_top = pn.Column(self.open_full, sizing_mode="stretch_width", css_classes=["sdpa-embed-only"])
        self.embed_bar = pn.Column(self.share_controls(), sizing_mode="stretch_width", css_classes=["sdpa-embed-only"])
        self.lab.param.watch(self._follow_embed, ["embed"])
        self._follow_embed()
        tmpl = pn.template.BootstrapTemplate(
            title=TITLE, sidebar=[controls],
            main=[self.header, self.embed_top, self.notice, self.dismiss, self.content, self.footer, self.embed_bar],
            header_background=HEADER_BG, sidebar_width=330, collapsed_sidebar=True,
            # the static site has no busy spinner: Panel's bookkeeping for it ran on every change in
            # the worker (each one a message to the page), for a spinner that flickered on every step
            **({"busy_indicator": None} if static_site() else {}))
        tmpl.config.raw_css.append(TEMPLATE_CSS)
        return tmpl

    def _follow_embed(self, *_):
        embed = self.lab.embed
        self.header.visible = self.footer.visible = not embed
        self.embed_bar.visible = self.embed_top.visible = embed
        if embed:
            self._update_open_full()

    def _update_open_full(self, *_):
        if not self.lab.embed:
            return
        pairs = [(k, v) for k, v in parse_qsl(self.current_search().lstrip("?")) if k != "embed"]
        self.open_full.object = (f"<a href='./?{html.escape(urlencode(pairs), quote=True)}' target='_blank' "
                                 f"rel='noopener'>Open in SDPA Lab ↗</a> <span class='sdpa-muted'>"
                                 f"(every view and setting)</span>")


#: The static site ships a notices page (build/notices.py) the footer links to; in the built site's
#: Pyodide worker the platform says it is the site, in the pre-render STATIC_SITE_ENV (web/options.py).
#: The link the static site builds the app for: set by the pre-render for each page it draws
#: (build/prerender.py), and by the worker to the visitor's link, so the live document is the linked
#: view from its first draw (the page adopts the pre-render of that view; build/templates/boot.js).
SEARCH_ENV = "SDPA_LAB_SEARCH"


def static_site() -> bool:
    return sys.platform == "emscripten" or os.environ.get(STATIC_SITE_ENV) == "1"


# On a phone the settings sidebar (about 1100 px tall) would stand before every plot: it starts
# collapsed there, behind the header's menu button. TEMPLATE_CSS hides it from the first paint (a
# script run once the page is ready would move everything below it up: a layout shift); this script
# only tells Bootstrap's toggle the state the reader already sees, so the menu button opens it as
# usual. Once: the live page in Pyodide fires document_ready again, and must not close an open sidebar.
PHONE_SIDEBAR_JS = """
const sidebar = document.getElementById('sidebar');
if (sidebar && !sidebar.classList.contains('sdpa-phone-ready')) {
  if (window.matchMedia('%s').matches) {
    sidebar.classList.remove('show');
    const toggle = document.getElementById('sidebar-toggle');
    if (toggle) toggle.setAttribute('aria-expanded', 'false');
  }
  sidebar.classList.add('sdpa-phone-ready');
}
""" % PHONE


#: ``?embed=1``: mark the document so TEMPLATE_CSS hides the header bar and the sidebar (the template's own
#: HTML, outside Panel's components). In the static site the pre-rendered document carries it too, so the
#: chrome goes as soon as BokehJS draws the first paint, before Python is live.
EMBED_JS = """
const embed = new URLSearchParams(window.location.search).get('embed');
if (embed && /^(1|true|yes|on)$/i.test(embed)) document.documentElement.classList.add('sdpa-embed');
"""

#: The Share button: the current address (Panel mirrors every setting into it) without embed, copied, and
#: shown with an <iframe> snippet of the same state with embed=1.
SHARE_JS = r"""
const full = new URL(window.location.href);
full.searchParams.delete('embed');            // the link opens the whole page; the <iframe> the view alone
const link = full.href;
const url = new URL(link);
url.searchParams.set('embed', 'true');
const frame = '<iframe src="' + url.href + '" width="100%" height="640" style="border:0" loading="lazy" ' +
              'title="SDPA Lab: why attention divides by the square root of d_k"></iframe>';
snippet.value = link + '\n\n' + frame;
snippet.visible = true;
if (navigator.clipboard && window.isSecureContext) navigator.clipboard.writeText(link + '\n\n' + frame).catch(() => {});
"""


def mark_embedded(doc) -> None:
    if doc is not None:
        doc.js_on_event("document_ready", CustomJS(code=EMBED_JS))


def collapse_sidebar_on_phones(doc) -> None:
    if doc is not None:
        doc.js_on_event("document_ready", CustomJS(code=PHONE_SIDEBAR_JS))


def bound_request_query() -> list[str]:
    """Under `panel serve`: take the request's query string away from Panel's parser, so that every link
    reaches the page's (``Page.connect_location``). Panel parses a new ``pn.state.location``'s query
    into typed values at once (``panel.util.parse_query``), and that raises on a 4301-digit value, or on
    one that ``str.isdigit`` accepts and ``int`` refuses (``²``, ``⑤``): the app never rendered. The
    location is made here from the request without its query; the query, cut to safe bounds, is then
    set with Panel's parser turned off (its own guard flag, as connect_location does for later ones).
    Returns the notices about what was cut; nothing to do without a server request (Pyodide, tests)."""
    context = pn.state.curdoc.session_context if pn.state.curdoc is not None else None
    request = server_request(context)
    if request is None or "?" not in getattr(request, "uri", ""):
        return []
    path, _, query = request.uri.partition("?")
    bounded, notices = bound_search(query)
    request.uri = path                     # what pn.state.location is made from, just below
    loc = pn.state.location
    if loc is not None:
        stop_location_parser(loc)          # Panel's parser off
        loc.search = bounded
    return notices


def create_app(search: str | None = None):
    """A new page for this session, mirrored to and from the browser's address bar."""
    cut = bound_request_query()            # before anything reads pn.state.location
    if search is None and static_site():
        search = os.environ.get(SEARCH_ENV) or None
    page = Page(search=search)
    tmpl = page.template()
    if pn.state.location is not None:
        page.connect_location()
    if cut:
        page.notices = cut + page.notices
    a11y.install(pn.state.curdoc)
    dark_figures.install(pn.state.curdoc)   # the plots' colours follow prefers-color-scheme
    install_step_scroll(pn.state.curdoc)    # a new tour step opens at its top
    install_history(pn.state.curdoc)  # slider moves replace the history entry; view changes push one
    collapse_sidebar_on_phones(pn.state.curdoc)
    mark_embedded(pn.state.curdoc)
    if sys.platform != "emscripten":        # in Pyodide the worker's link goes live (sdpa_worker.link)
        pn.state.onload(go_live)            # under panel serve: once the session has loaded
    tmpl.page = page  # handle for tests and the latency script
    return tmpl
