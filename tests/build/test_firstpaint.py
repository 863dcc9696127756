"""build/templates/firstpaint.js in Node, in a jsdom page: which pre-rendered page a link gets, its HTML
layer swapped in (or kept when its file is damaged), the document handed to BokehJS (a stand-in that
records what it is given), and the layer gone once it is drawn."""
from __future__ import annotations

import html
import json
import subprocess

import pytest

from node_tools import TEMPLATE_LOADER, node, tool
from web.urlstate import STATE_KEYS

LINKS = ["", "?view=dial", "?step=3", "?view=tour&step=12", "?view=tour&step=99", "?step=0", "?step=abc",
         "?view=nowhere", "?view=&step=2", "?embed=1&view=precision", "?embed=%201&view=dial", "?embed=+yes+",
         "?embed=11", "?view=constructor", "?view=__proto__"]
# links and the setting keys they give, in the link's order, first occurrence only
SETTING_LINKS = {"?view=dial": [], "?view=dial&step=3&embed=1": [], "?d_k=512&view=playground": [["d_k", "512"]],
                 "?view=playground&rule=linear&d_k=512&d_k=8": [["rule", "linear"], ["d_k", "512"]],
                 "?toString=1&constructor=2&__proto__=3": [],
                 "?d_k=1&n=2&sigma=3&rho=0.5&rule=" + "x" * 30: [["d_k", "1"], ["n", "2"], ["sigma", "3"],
                                                                  ["rho", "0.5"], ["rule", "x" * 30]]}
TEXT = "<p class=\"x\">it's `q·k` & more</p>"

RUN = r"""
const fs = require("node:fs");
const {JSDOM} = require(process.argv[2]);
const {runInContext} = require(process.argv[1]);
const input = JSON.parse(fs.readFileSync(0, "utf8"));

const PAGE = `<!doctype html><html><body>
  <div id="sdpa-html-paint"><h2>Default view</h2></div>
  <div id="main" data-root-id="p1002"></div><div id="sidebar" data-root-id="p1001"></div>
  <div id="header" data-root-id="p1003"></div></body></html>`;
const FIRST_PAINT = {default: "tour-1", settings: ["d_k", "rule", "sigma"], files: {dial: {path: "first/dial.json", integrity: "sha256-abc"},
                                                precision: {path: "first/precision.json", integrity: "sha256-def"}}};
const DIAL = {html: "<h2>The dial</h2>", docid: "d-dial", root_ids: ["q1", "q2", "q3"],
              docs_json: JSON.stringify({"d-dial": {roots: [{type: "object", name: "Column", id: "q1", attributes: {}}]}})};
const PRECISION = {html: "<h2>Half precision</h2>", docid: "d-prec", root_ids: ["r1", "r2", "r3"],
  docs_json: JSON.stringify({"d-prec": {roots: [
    {type: "object", name: "Row", id: "r1", attributes: {css_classes: ["sdpa-chrome"], children: [
      {type: "object", name: "Div", id: "r4", attributes: {css_classes: ["sdpa-embed-only"], visible: false}}]}}]}})};
const DEFAULT_DOCS = JSON.stringify({"d-default": {roots: []}}).replaceAll('"', "&quot;");

async function load(search, {files = {}, fails = false} = {}) {
  const dom = new JSDOM(PAGE, {runScripts: "outside-only", pretendToBeVisual: true, url: `http://localhost/${search}`});
  const w = dom.window;
  const log = {fetched: [], warned: [], embedded: null};
  w.fetch = async (url, options) => {
    log.fetched.push([url, options.integrity]);
    const body = files[url];
    if (body === undefined) throw new TypeError("Failed to fetch");
    if (body === 404) return {ok: false, status: 404};
    return {ok: true, status: 200, json: async () => body};
  };
  w.console.warn = (text) => log.warned.push(text);
  runInContext(dom.getInternalVMContext(), "firstpaint.js");
  const lab = {firstPaint: null, htmlPaint: "shown"};
  const paint = w.sdpaFirstPaintOf({lab, firstPaint: FIRST_PAINT, search: w.location.search});
  const other = w.document.documentElement.classList.contains("sdpa-hp-other");
  await paint.shown;
  const note = () => w.document.getElementById("sdpa-preview");
  const preview = {keys: lab.preview, classed: w.document.documentElement.classList.contains("sdpa-preview"),
                   text: note() && note().textContent, role: note() && note().getAttribute("role"),
                   html: note() && note().innerHTML,
                   busy: w.document.getElementById("main").getAttribute("aria-busy")};
  paint.live();
  preview.after = {classed: w.document.documentElement.classList.contains("sdpa-preview"), note: note() !== null,
                   busy: w.document.getElementById("main").getAttribute("aria-busy"),
                   ended: typeof lab.previewEnded};
  const layerText = w.document.getElementById("sdpa-html-paint").textContent;
  const hidden = () => w.document.documentElement.classList.contains("sdpa-drawing");
  const Bokeh = {embed: {embed_items: async (docs, items) => {
    log.embedded = {docs, items, hidden: hidden()};
    if (fails) throw new Error("BokehJS failed");
    return "views";
  }}};
  const items = [{docid: "d-default", roots: {}, root_ids: ["p1001", "p1002", "p1003"]}];
  let returned;
  try {
    returned = await paint.draw(Bokeh, DEFAULT_DOCS, items);
  } catch (err) {
    returned = `threw ${err.message}`;
  }
  const hiddenAfterDraw = hidden();
  const beforeFrames = lab.htmlPaint;
  await new Promise((resolve) => w.requestAnimationFrame(() => w.requestAnimationFrame(() => setTimeout(resolve, 0))));
  const out = {other, layerText, preview, returned, beforeFrames, lab, log, drawnIsDrawn: paint.drawn === log.embedded.docs,
               hiddenAfterDraw, hiddenAfterFrames: hidden(),
               embeddedClass: w.document.documentElement.classList.contains("sdpa-embed"),
               otherAfter: w.document.documentElement.classList.contains("sdpa-hp-other"),
               layerGone: w.document.getElementById("sdpa-html-paint") === null};
  w.close();
  return out;
}

(async () => {
  const {sdpaFirstPaintKey: key, sdpaEmbedded: embedded, sdpaUnescapeHtml: unescape, sdpaLinkSettings: linkSettings,
         sdpaPreviewText: previewText} = runInContext(new JSDOM("", {runScripts: "outside-only"}).getInternalVMContext(),
                                                      "firstpaint.js");
  const pure = {
    keys: input.links.map((s) => key(s, "tour-1")),
    embedded: input.links.map((s) => embedded(s)),
    unescaped: unescape(input.escaped),
    settings: input.settingLinks.map((s) => linkSettings(s, input.settingKeys)),
    previewText: input.settingLinks.map((s) => previewText(linkSettings(s, input.settingKeys))),
  };
  const out = {
    ...pure,
    defaultLink: await load(""),
    dial: await load("?view=dial", {files: {"./first/dial.json": DIAL}}),
    damaged: await load("?view=dial"),
    missing: await load("?view=dial", {files: {"./first/dial.json": 404}}),
    failed: await load("", {fails: true}),
    embed: await load("?view=precision&embed=1", {files: {"./first/precision.json": PRECISION}}),
    prototype: await load("?view=constructor"),
    withSettings: await load("?view=dial&d_k=512&rule=%3Cb%3Ex%3C%2Fb%3E", {files: {"./first/dial.json": DIAL}}),
  };
  process.stdout.write(JSON.stringify(out));
})();
"""


@pytest.fixture(scope="module")
def results() -> dict:
    jsdom = tool("jsdom/package.json").parent
    stdin = json.dumps({"links": LINKS, "settingLinks": list(SETTING_LINKS), "settingKeys": list(STATE_KEYS),
                        "escaped": html.escape(TEXT, quote=True).replace("`", "&#x60;")})
    done = subprocess.run([node(), "-e", RUN, str(TEMPLATE_LOADER), str(jsdom)],
                          input=stdin, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_each_link_gets_its_page(results):
    assert dict(zip(LINKS, results["keys"])) == {
        "": "tour-1", "?view=dial": "dial", "?step=3": "tour-3", "?view=tour&step=12": "tour-12",
        "?view=tour&step=99": "tour-99", "?step=0": "tour-1", "?step=abc": "tour-1", "?view=nowhere": "nowhere",
        "?view=&step=2": "", "?embed=1&view=precision": "precision", "?embed=%201&view=dial": "dial",
        "?embed=+yes+": "tour-1", "?embed=11": "tour-1", "?view=constructor": "constructor",
        "?view=__proto__": "__proto__"}
    embedded = [link for link, e in zip(LINKS, results["embedded"]) if e]
    assert embedded == ["?embed=1&view=precision", "?embed=%201&view=dial", "?embed=+yes+"]


def test_embedded_is_read_as_python_reads_it(results):
    """Both runtimes read one link the same way: web/urlstate.py's parser decides embed, and firstpaint.js
    agrees on every link."""
    from web.urlstate import KEYS, parse_query
    owner, name, _ = KEYS["embed"]
    python = [bool(parse_query(link)[0 if owner == "lab" else 1].get(name)) for link in LINKS]
    assert results["embedded"] == python


def test_prototype_keys_find_no_file(results):
    """?view=constructor is no view: Object.prototype's keys find no first-paint file (no fetch of
    ./undefined), and the default page is drawn."""
    r = results["prototype"]
    assert r["log"]["fetched"] == [] and r["lab"]["firstPaint"] == "tour-1"
    assert r["layerText"] == "Default view"


def test_a_link_with_settings_is_a_named_preview(results):
    """The link's setting keys are read in its order, once each, only from web/urlstate.py's STATE_KEYS;
    the notice names at most three, cut to 20 characters."""
    assert dict(zip(SETTING_LINKS, map(lambda s: [list(p) for p in s], results["settings"]))) == SETTING_LINKS
    texts = dict(zip(SETTING_LINKS, results["previewText"]))
    assert "d_k = 512" in texts["?d_k=512&view=playground"]
    many = texts[list(SETTING_LINKS)[-1]]
    assert "d_k = 1, n = 2, sigma = 3 and 2 more" in many and "x" * 21 not in many
    for text in texts.values():
        assert text.startswith("Preview at this view's default settings")


def test_the_preview_shows_until_the_page_is_live(results):
    r = results["withSettings"]["preview"]
    assert r["keys"] == ["d_k", "rule"] and r["classed"] and r["role"] == "status" and r["busy"] == "true"
    assert "d_k = 512, rule = <b>x</b>" in r["text"] and "<b>" not in r["html"]      # text, never HTML
    assert r["after"] == {"classed": False, "note": False, "busy": None, "ended": "number"}
    plain = results["dial"]["preview"]
    assert plain["keys"] is None and not plain["classed"] and plain["text"] is None and plain["busy"] is None


def test_unescaping_undoes_html_escape(results):
    assert results["unescaped"] == TEXT


def test_the_default_link(results):
    r = results["defaultLink"]
    assert r["other"] is False and r["log"]["fetched"] == []          # index.html has its page
    assert r["layerText"] == "Default view"
    assert r["log"]["embedded"]["docs"] == {"d-default": {"roots": []}}
    assert r["log"]["embedded"]["items"][0]["docid"] == "d-default"
    assert r["lab"]["firstPaint"] == "tour-1" and r["drawnIsDrawn"] and r["returned"] == "views"
    assert r["beforeFrames"] == "shown"                              # the layer stays until BokehJS has laid out
    assert r["layerGone"] and r["lab"]["htmlPaint"] == "replaced"
    # the document stays hidden while BokehJS draws it, and shows with the layer's going
    assert r["log"]["embedded"]["hidden"] and r["hiddenAfterDraw"] and not r["hiddenAfterFrames"]
    assert 0 <= r["lab"]["painted"]["start"] <= r["lab"]["painted"]["end"]


def test_another_link_draws_its_own_page(results):
    r = results["dial"]
    assert r["other"] is True and r["otherAfter"] is False
    assert r["log"]["fetched"] == [["./first/dial.json", "sha256-abc"]]
    assert r["layerText"] == "The dial"
    item = r["log"]["embedded"]["items"][0]
    assert item["docid"] == "d-dial" and item["root_ids"] == ["q1", "q2", "q3"]
    # the page's root elements in the order of their root ids: sidebar (p1001), main, header
    assert item["roots"] == {"q1": "sidebar", "q2": "main", "q3": "header"}
    assert list(r["log"]["embedded"]["docs"]) == ["d-dial"] and r["lab"]["firstPaint"] == "dial"
    assert r["layerGone"]


@pytest.mark.parametrize("case", ["damaged", "missing"])
def test_a_damaged_file_draws_the_default_page(results, case):
    r = results[case]
    assert r["other"] is True and r["otherAfter"] is False         # the default layer is shown again
    assert r["layerText"] == "Default view"
    assert r["log"]["embedded"]["docs"] == {"d-default": {"roots": []}}
    assert r["lab"]["firstPaint"] == "tour-1"
    reason = "Failed to fetch" if case == "damaged" else "HTTP 404"
    assert r["log"]["warned"] == [f"SDPA Lab: first/dial.json could not be read ({reason}); drawing the default page first"]


def test_embedded(results):
    r = results["embed"]
    assert r["embeddedClass"] is True
    row = r["log"]["embedded"]["docs"]["d-prec"]["roots"][0]
    assert row["attributes"]["visible"] is False                     # the chrome hidden
    assert "visible" not in row["attributes"]["children"][0]["attributes"]   # the embed bar shown (its default)
    assert results["dial"]["embeddedClass"] is False


def test_a_failed_draw_shows_what_was_drawn_under_the_layer(results):
    r = results["failed"]
    assert r["returned"] == "threw BokehJS failed"          # the page's error handling hears of it
    assert r["log"]["embedded"]["hidden"] and not r["hiddenAfterDraw"]
    assert not r["layerGone"] and r["lab"]["htmlPaint"] == "shown"
