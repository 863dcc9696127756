"""The query string: parse any input into valid state (with notices), and write state back.

Hostile input (negative, huge, NaN, text, markup, repeated keys, very long strings) never raises:
each bad value is clamped or reset to its default and produces one plain-words notice.
Notices never echo more than a short, HTML-escaped excerpt of what was given.
"""
from __future__ import annotations

import html
import itertools
import math
import re
from urllib.parse import parse_qsl, urlencode

import panel as pn
import param
from bokeh.models import CustomJS

from sdpa_core import hf_config

from .options import VIEWS, nearest_option
from .panel_internals import rendered_models
from .settings import SETTINGS
from .state import LabState
from .tour import STEPS
from .training_state import TrainingState

#: The view the bare address opens (no query at all), and where a link's unknown view is reset to: the answer in one
#: screen. A link that gives settings but no view opens the tour (``LabState``'s default), as links always have.
HOME_VIEW = "answer"
MAX_QUERY_CHARS = 2000
MAX_VALUE_CHARS = 40
#: A text setting (the config.json fields of ``config``) may be longer: DeepSeek-V3's are ~330 characters.
MAX_TEXT_CHARS = 600
MAX_PAIRS = 64
MAX_NOTICES = 6

# key -> (object "lab" or "train", parameter name, options for snapping): the parameter itself (LabState,
# TrainingState) declares its type, bounds, default and doc; the link reads them from it (``kind``).
#: link key -> (owner, parameter, a slider's steps or None), from settings.SETTINGS (in its order).
KEYS = {s.key: (s.owner, s.param, s.steps) for s in SETTINGS}
TRUE, FALSE = {"1", "true", "yes", "on"}, {"0", "false", "no", "off"}
#: The link keys that set what a view shows (all but where it is, view and step, and how, embed): the
#: site pre-renders each view at its defaults, so a link with any of these first paints as a preview
#: (build/templates/firstpaint.js) until the live page has the link's state.
STATE_KEYS = tuple(k for k in KEYS if k not in ("view", "step", "embed"))


def _show(raw: str) -> str:
    """A short, escaped excerpt of untrusted text, safe to put in HTML."""
    raw = raw if len(raw) <= MAX_VALUE_CHARS else raw[:MAX_VALUE_CHARS] + "…"
    return html.escape(repr(raw)[1:-1] if raw.isprintable() else raw.encode("unicode_escape").decode("ascii"))


def _param(key: str):
    obj, name, _ = KEYS[key]
    return (LabState if obj == "lab" else TrainingState).param[name]


def kind(key: str) -> str:
    """How a link writes the key's value, from its parameter's type: "bool", "select", "text", "pattern" (a
    String with a ``regex``), "int" or "float"."""
    p = _param(key)
    if isinstance(p, param.Boolean):
        return "bool"
    if isinstance(p, param.Selector):
        return "select"
    if isinstance(p, param.String):
        return "text" if p.regex is None else "pattern"     # a config.json, or a short code (the tour's picks)
    return "int" if isinstance(p, param.Integer) else "float"


def value_limit(key: str) -> int:
    """The longest value a link may give for ``key`` (characters, once decoded); unknown keys: MAX_VALUE_CHARS."""
    return MAX_TEXT_CHARS if key in KEYS and kind(key) == "text" else MAX_VALUE_CHARS


def _parse_text(key: str, raw: str):
    """A config link value: read as a config.json would be, written back in its canonical form."""
    if not raw:
        return "", None
    try:
        return hf_config.to_link(hf_config.read_config(hf_config.parse_config(raw))), None
    except hf_config.ConfigError as e:
        message = str(e) if len(str(e)) <= 300 else str(e)[:299] + "…"
        return "", f"{key}: the model config in the link was not read: {html.escape(message)}"


def parse_value(key: str, raw: str):
    """``(value, notice or None)`` for one key; ``value`` is always valid for the parameter."""
    _, _, options = KEYS[key]
    p, how = _param(key), kind(key)
    default = HOME_VIEW if key == "view" else p.default
    if len(raw) > value_limit(key):
        return default, f"{key}: the value was too long; reset to {default if default != '' else 'none'}."
    if how == "text":
        return _parse_text(key, raw)
    if how == "pattern":
        if re.match(p.regex, raw):
            return raw, None
        return default, f"{key}: “{_show(raw)}” is not a valid value; reset to {default if default != '' else 'none'}."
    if how == "select":
        if raw in p.objects:
            return raw, None
        return default, f"{key}: “{_show(raw)}” is not one of {', '.join(map(str, p.objects))}; reset to {default}."
    if how == "bool":
        low = raw.strip().lower()
        if low in TRUE or low in FALSE:
            return low in TRUE, None
        return default, f"{key}: “{_show(raw)}” is not true or false; reset to {str(default).lower()}."
    try:
        x = float(raw.strip())
    except ValueError:
        return default, f"{key}: “{_show(raw)}” is not a number; reset to {default}."
    if not math.isfinite(x):
        return default, f"{key}: “{_show(raw)}” is not a finite number; reset to {default}."
    lo, hi = p.bounds
    notice = None
    if x < lo or x > hi:
        clamped = min(max(x, lo), hi)
        notice = f"{key}: {_show(raw)} is outside [{lo}, {hi}]; clamped to {clamped:g}."
        x = clamped
    if how == "int":
        if x != int(x) and notice is None:
            notice = f"{key}: {_show(raw)} is not a whole number; rounded to {round(x)}."
        x = int(round(x))
    if options is not None and x not in options:
        snapped = nearest_option(x, options)
        if notice is None:
            notice = f"{key}: {_show(raw)} is not one of the slider's steps; snapped to {snapped:g}."
        else:
            notice = notice.rstrip(".") + f", then snapped to {snapped:g}."
        x = snapped
    return x, notice


def bound_search(search: str) -> tuple[str, list[str]]:
    """The query string cut to what any parser handles safely, before anything parses it (Panel's own
    parser turns a 4301-digit value into an int and fails): each key and value clipped to a few
    characters past ``MAX_VALUE_CHARS`` (enough for ``parse_value`` to say it was too long), at most
    ``MAX_PAIRS`` non-empty pairs, at most ``MAX_QUERY_CHARS`` characters in all. Clipping first keeps
    the settings that follow one huge value. Returns ``(bounded "?..." or "", notices)``."""
    notices = []
    search = search or ""
    if search.startswith("?"):
        search = search[1:]
    def clip(key: str) -> int:                        # a percent-encoded character takes 3
        return 3 * (value_limit(key) + 1)

    pairs = [k[:clip("")] + sep + v[:clip(k)] for k, sep, v in (p.partition("=") for p in search.split("&") if p)]
    if len(pairs) > MAX_PAIRS:
        notices.append(f"The link had more than {MAX_PAIRS} settings; the rest were ignored.")
        pairs = pairs[:MAX_PAIRS]
    out = "&".join(pairs)
    if len(out) > MAX_QUERY_CHARS:
        notices.append(f"The link's query string was longer than {MAX_QUERY_CHARS} characters; the rest was ignored.")
        out = out[:MAX_QUERY_CHARS].rpartition("&")[0] or out[:MAX_QUERY_CHARS]
    return ("?" + out if out else ""), notices


def parse_query(search: str) -> tuple[dict, dict, list[str]]:
    """Parse ``?a=1&b=2`` into ``(lab_values, train_values, notices)``. Never raises."""
    search, notices = bound_search(search)
    search = search[1:]
    try:
        pairs = parse_qsl(search, keep_blank_values=True)  # at most ~1000 pairs in 2000 characters
    except Exception:  # e.g. too many fields
        return {}, {}, ["The link's query string could not be read; every setting was reset."]
    lab, train, seen, unknown = {}, {}, {}, []
    for key, raw in pairs:
        if key not in KEYS:
            if key not in unknown:
                unknown.append(key)
            continue
        seen[key] = seen.get(key, 0) + 1
        if seen[key] > 1:
            continue
        value, notice = parse_value(key, raw)
        if notice:
            notices.append(notice)
        (lab if KEYS[key][0] == "lab" else train)[KEYS[key][1]] = value
    for key, count in seen.items():
        if count > 1:
            notices.append(f"{key} was given {count} times; the first value was used.")
    if unknown:
        shown = ", ".join(f"“{_show(k)}”" for k in unknown[:3])
        more = f" and {len(unknown) - 3} more" if len(unknown) > 3 else ""
        notices.append(f"Ignored unknown setting(s) {shown}{more}.")
    # the selected query row must exist for the (possibly new) sequence length
    n = lab.get("n", LabState.param.n.default)
    if lab.get("query", 0) > n - 1:
        notices.append(f"query: {lab['query']} is past the last row for n = {n}; set to {n - 1}.")
        lab["query"] = n - 1
    if len(notices) > MAX_NOTICES:
        notices = notices[:MAX_NOTICES - 1] + [f"…and {len(notices) - MAX_NOTICES + 1} more corrections."]
    return lab, train, notices


def apply_query(search: str, lab: LabState, train: TrainingState) -> list[str]:
    """Set ``lab`` and ``train`` from a query string (valid values only); returns the notices."""
    lab_values, train_values, notices = parse_query(search)
    if not (search or "").lstrip("?").strip():      # the bare address: the answer
        lab_values = {"view": HOME_VIEW}
    # unspecified keys go back to their defaults (a tour step's own settings on a tour link), so a link
    # reproduces the view exactly
    lab_all, train_all = baseline(lab_values.get("view", LabState.param.view.default),
                                  lab_values.get("step", LabState.param.step.default))
    lab_all.update(lab_values)
    train_all.update(train_values)
    n = lab_all["n"]
    lab_all["query"] = min(lab_all["query"], n - 1)
    with param.parameterized.batch_call_watchers(lab):
        lab.param.update(**{k: v for k, v in lab_all.items() if getattr(lab, k) != v})
    changed = {k: v for k, v in train_all.items() if getattr(train, k) != v}
    if changed:
        train.param.update(**changed)
    return notices


def baseline(view: str, step: int) -> tuple[dict, dict]:
    """Every linked setting's value when a link does not give it: its default, or on the tour the
    step's own settings (so ``?view=tour&step=4`` opens step 4 as the tour sets it up).
    Returns ``(lab values, train values)`` by parameter name."""
    values = {key: (LabState if o == "lab" else TrainingState).param[name].default
              for key, (o, name, _) in KEYS.items()}
    if view == "tour":
        values.update(STEPS[min(max(int(step), 1), len(STEPS)) - 1].settings)
    lab = {KEYS[k][1]: v for k, v in values.items() if KEYS[k][0] == "lab"}
    train = {KEYS[k][1]: v for k, v in values.items() if KEYS[k][0] == "train"}
    return lab, train


def step_query(step: int, picks: str = "") -> str:
    """The link of a tour step as the tour sets it up (with the reader's ``picks`` so far, when given)."""
    return "?" + urlencode({"view": "tour", "step": step, **({"picks": picks} if picks else {})})


def first_paint_links() -> dict[str, str]:
    """The links whose first paint the site pre-renders, by key: one per view (its name) and one per
    tour step (``tour-N``), each at its own settings. A link's key is its view and step alone
    (``first_paint_key``); its other settings arrive once Python is live."""
    links = {f"tour-{n}": step_query(n) for n in range(1, len(STEPS) + 1)}
    links.update({view: "?" + urlencode({"view": view}) for view in VIEWS if view != "tour"})
    return links


#: The key of the page drawn when a link names no view: the default view (its first step, on the tour).
DEFAULT_FIRST_PAINT = HOME_VIEW


def to_query(lab: LabState, train: TrainingState) -> str:
    """The query string of the current state: ``view`` always, every other key when it differs from the
    value a link without it would give (``baseline``)."""
    out = {}
    base = baseline(lab.view, lab.step)
    for key, (obj, name, _) in KEYS.items():
        target = lab if obj == "lab" else train
        value = getattr(target, name)
        if key == "step":   # the tour's step: always on a tour link, never on another view's
            if lab.view != "tour":
                continue
        elif key == "picks" and lab.view != "tour":   # the tour's predictions: kept while elsewhere, on its links only
            continue
        elif key != "view" and value == base[0 if obj == "lab" else 1][name]:
            continue
        if kind(key) == "bool":
            value = "true" if value else "false"
        elif kind(key) == "float":
            value = f"{value:.6g}"
        out[key] = value
    return "?" + urlencode(out)



# ---- browser history ------------------------------------------------------------------------------
#: Panel's Location model (panel/models/location.ts) writes every change with history.pushState, so
#: each slider step would become a Back-button stop. This wraps pushState once per tab: a URL whose
#: ``view`` key (or tour ``step``) differs from the current one is pushed (Back returns to the previous view), any other
#: change replaces the current entry, and a push of the URL already shown is dropped. The correction of
#: a link being opened (a clamped step, an unknown view, ``step=３`` written ``step=3``) also replaces
#: the entry, whatever it changes: pushed, it left the raw link behind, and Back to it was corrected and
#: pushed again, so Back never left. Python marks such an address first (``mark_correction``: a tag on
#: the Location model, sent before its ``search``); a mark is good for the next address only.
#: On Back/Forward (popstate) the Location model's ``search`` is set to the restored address, which Panel sends to
#: Python, where the page follows it (Page._on_location). Works alike under `panel serve` and Pyodide.
CORRECTION_TAG = "sdpa-correction"
HISTORY_JS = r"""
if (!window.__sdpaHistory) {
  window.__sdpaHistory = true;
  const DEFAULT_VIEW = %(default_view)s, HOME_VIEW = %(home_view)s;
  const TAG = %(tag)s + ' ';
  const viewOf = (url) => {                    // a tour step counts as a view of its own
    const params = new URL(url, window.location.href).searchParams;
    const view = params.get('view') || (params.toString() ? DEFAULT_VIEW : HOME_VIEW);   // the bare address: home
    return view === 'tour' ? view + ':' + (params.get('step') || '1') : view;
  };
  function locations() {
    const out = [];
    for (const doc of (window.Bokeh ? Bokeh.documents : [])) for (const m of doc.all_models) {
      const p = m.properties;
      if (p && p.search && p.pathname && p.hash && p.reload) out.push(m);  // panel.models.location.Location
    }
    return out;
  }
  const used = new Set();                      // correction marks already spent
  function marks() {                           // [mark, its search] not yet spent
    const out = [];
    for (const loc of locations()) for (const tag of (loc.tags || [])) {
      if (typeof tag !== 'string' || !tag.startsWith(TAG) || used.has(tag)) continue;
      const rest = tag.slice(TAG.length);
      out.push([tag, rest.slice(rest.indexOf(' ') + 1)]);
    }
    return out;
  }
  const spend = () => { for (const [tag] of marks()) used.add(tag); };
  const push = window.history.pushState.bind(window.history);
  const replace = window.history.replaceState.bind(window.history);
  window.history.pushState = function (state, unused, url) {
    if (url == null) return push(state, unused, url);
    const next = new URL(url, window.location.href);
    const corrects = marks().some(([, search]) => search === next.search);
    spend();                                   // a mark is good for the next address only
    if (next.href === window.location.href) return;             // already shown (e.g. after Back)
    if (corrects) return replace(state, unused, url);            // the link being opened, corrected
    if (viewOf(next.href) !== viewOf(window.location.href)) return push(state, unused, url);
    return replace(state, unused, url);
  };
  window.addEventListener('popstate', () => {
    spend();                                   // marks made before Back are about another address
    for (const loc of locations()) {
      if (loc.search !== window.location.search) loc.search = window.location.search;
    }
  });
}
""" % {"default_view": repr(str(LabState.param.view.default)), "home_view": repr(HOME_VIEW), "tag": repr(CORRECTION_TAG)}
_marks = itertools.count(1)


def mark_correction(location, search: str) -> None:
    """Tell the history script that ``search``, about to be written to ``location`` (Panel's Location),
    corrects the link being opened: its entry is replaced, not pushed. Each mark is new (a counter), so
    one spent in this tab never applies to a later address. No-op before the page has a Location model
    (the browser then gets the corrected address with the document, and pushes nothing)."""
    tag = f"{CORRECTION_TAG} {next(_marks)} {search}"
    with pn.io.unlocked():          # a write straight to a model, as web/views/common.py set_html's
        for model in rendered_models(location):
            model.tags = [tag]


def install_history(doc) -> None:
    """Attach the history script to a Bokeh document (no-op when there is none)."""
    if doc is not None:
        doc.js_on_event("document_ready", CustomJS(code=HISTORY_JS))
