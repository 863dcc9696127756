"""build/templates/progress.js in Node, in a jsdom page: the boot's progress panel marks each step,
says when one is stuck (and takes it back when news comes), names a failure's file or step with Retry,
and goes when the page is live. A fake clock drives the watchdog; nothing waits."""
from __future__ import annotations

import json
import subprocess

import pytest

from node_tools import node, tool
from sitebuild import ROOT

RUN = r"""
const fs = require("node:fs");
const {JSDOM} = require(process.argv[2]);
const source = fs.readFileSync(process.argv[1], "utf8");
const STEPS = [["page", "Page and plots drawn"], ["runtime", "Starting Python (Pyodide runtime)"],
               ["packages", "Loading packages"], ["app", "Running the app"]];

// a page with progress.js loaded, before or after its body is parsed
const pages = [];
function page({parsed = true, online = true} = {}) {
  const dom = new JSDOM("<!doctype html><body></body>", {runScripts: "outside-only"});
  const w = dom.window;
  if (!parsed) w.document.body.remove();     // as boot.js runs from <head>
  Object.defineProperty(w.navigator, "onLine", {get: () => online});
  w.errors = [];
  w.console.error = (text) => w.errors.push(text);
  w.eval(source);
  const log = {acts: [], stopped: 0, clock: 0, started: false};
  const lab = {steps: {}, ready: false, error: null, stalled: null};
  const progress = w.sdpaProgress({lab, steps: STEPS, limits: {download: 20, packages: 60},
                                   act: (name) => log.acts.push(name), stop: () => { log.stopped += 1; },
                                   started: () => log.started, now: () => log.clock * 1000});
  const panel = () => w.document.getElementById("sdpa-boot");
  const view = () => panel() && {
    role: panel().getAttribute("role"), classes: panel().className, title: panel().querySelector("strong").textContent,
    steps: [...panel().querySelectorAll("li")].map((li) => `${li.dataset.step}:${li.className}:${li.textContent}`),
    problem: panel().querySelector(".sdpa-problem").hidden ? null : panel().querySelector(".sdpa-problem").textContent,
    actions: panel().querySelector(".sdpa-actions").hidden ? null
      : [...panel().querySelectorAll("button")].filter((b) => !b.hidden).map((b) => b.textContent),
    progress: panel().querySelector(".sdpa-progress").className + "|" + panel().querySelector(".sdpa-progress").textContent,
  };
  const made = {w, dom, lab, log, progress, panel, view};
  pages.push(made);
  return made;
}

const cases = {
  "steps are marked in order, each with the time it started"() {
    const p = page();
    const before = p.view();
    p.log.clock = 2;
    p.progress.mark("packages");
    p.log.clock = 3;
    p.progress.mark("packages", "Loading packages (numpy)");
    p.progress.mark("app");
    return {before: before.steps, after: p.view().steps, steps: p.lab.steps, role: p.view().role};
  },
  "a panel made before the body is parsed appears with it, steps ahead"() {
    const p = page({parsed: false});
    const early = p.panel();
    p.progress.mark("app");
    p.w.document.documentElement.appendChild(p.w.document.createElement("body"));
    p.w.document.dispatchEvent(new p.w.Event("DOMContentLoaded"));
    return {early: early === null, steps: p.view().steps};
  },
  "quiet within the limit, then stuck, then news takes the notice back"() {
    const p = page();
    const idle = p.progress.check();
    p.log.clock = 100;
    p.progress.check();
    const before = p.lab.stalled;           // no worker yet and no download: not watched
    p.log.started = true;
    p.progress.mark("packages");
    p.progress.news();
    p.log.clock = 159;
    p.progress.check();
    const within = p.lab.stalled;
    p.log.clock = 161;
    p.progress.check();
    const stuck = {lab: p.lab.stalled, view: p.view()};
    p.progress.news();
    return {idle, before, within, stuck, after: p.view(), lab: p.lab.stalled};
  },
  "a download is stuck after its own limit and names the files"() {
    const p = page({online: false});
    p.progress.mark("packages");
    p.progress.waitingFor(["pyodide/packages.tar.gz", "pyodide/python_stdlib.zip.gz"]);
    p.progress.downloaded(4.2e6, 9.8e6);
    p.log.clock = 21;
    p.progress.check();
    return {view: p.view(), lab: p.lab.stalled};
  },
  "a failure names the file and the step, stops, offers Retry, and is final"() {
    const p = page();
    p.progress.mark("packages");
    p.progress.downloaded(9.8e6, 9.8e6);
    p.progress.fatal("pyodide/packages.tar.gz is damaged", {file: "pyodide/packages.tar.gz", detail: "sha256 differs"});
    p.progress.fatal("a second failure");
    p.log.clock = 1000;
    const watching = p.progress.check();
    p.panel().querySelector('[data-act="retry"]').click();
    p.panel().querySelector('[data-act="fresh"]').click();
    p.panel().querySelector(".sdpa-actions").click();        // not on a button: nothing
    return {view: p.view(), error: p.lab.error, file: p.lab.errorFile, detail: p.lab.errorDetail,
            stopped: p.log.stopped, acts: p.log.acts, errors: p.w.errors, watching, stalled: p.lab.stalled};
  },
  "the page's own files fail under 'Loading the page'"() {
    const p = page();
    p.progress.fatal("boot.css did not load", {file: "boot.css", step: "page"});
    return {error: p.lab.error};
  },
  "live: the panel goes, and nothing fails or stalls afterwards"() {
    const p = page();
    p.log.started = true;
    p.progress.done();
    p.lab.ready = true;
    const gone = p.panel() === null;
    p.progress.fatal("too late");
    p.log.clock = 1000;
    return {gone, watching: p.progress.check(), error: p.lab.error, stalled: p.lab.stalled, back: p.panel() === null};
  },
};

const out = {};
for (const [name, run] of Object.entries(cases)) out[name] = run();
pages.forEach((p) => p.dom.window.close());     // and with them each page's watchdog interval
process.stdout.write(JSON.stringify(out));
"""


@pytest.fixture(scope="module")
def results() -> dict:
    jsdom = tool("jsdom/package.json").parent
    done = subprocess.run([node(), "-e", RUN, str(ROOT / "build" / "templates" / "progress.js"), str(jsdom)],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_steps_in_order(results):
    r = results["steps are marked in order, each with the time it started"]
    assert r["before"] == ["page:sdpa-done:Page and plots drawn", "runtime:sdpa-current:Starting Python (Pyodide runtime)",
                           "packages::Loading packages", "app::Running the app"]
    assert r["after"] == ["page:sdpa-done:Page and plots drawn", "runtime:sdpa-done:Starting Python (Pyodide runtime)",
                          "packages:sdpa-done:Loading packages (numpy)", "app:sdpa-current:Running the app"]
    assert r["steps"] == {"runtime": 0, "packages": 2000, "app": 3000}     # a step's start is kept
    assert r["role"] == "status"


def test_panel_before_the_body(results):
    r = results["a panel made before the body is parsed appears with it, steps ahead"]
    assert r["early"] is True
    assert r["steps"][-1] == "app:sdpa-current:Running the app"


def test_stuck_and_back(results):
    r = results["quiet within the limit, then stuck, then news takes the notice back"]
    assert r["idle"] is True and r["before"] is None and r["within"] is None
    assert r["stuck"]["lab"] == "Loading packages has shown no progress for 61 s."
    assert r["stuck"]["view"]["problem"] == r["stuck"]["lab"]
    assert "sdpa-stalled" in r["stuck"]["view"]["classes"]
    assert r["stuck"]["view"]["actions"] == ["Retry", "Reload from the network"]
    assert r["lab"] is None and r["after"]["problem"] is None and r["after"]["actions"] is None
    assert "sdpa-stalled" not in r["after"]["classes"]


def test_stuck_download(results):
    r = results["a download is stuck after its own limit and names the files"]
    assert r["lab"] == ("Loading packages: nothing has arrived for 21 s; still waiting for "
                        "pyodide/packages.tar.gz, pyodide/python_stdlib.zip.gz.")
    assert r["view"]["progress"] == "sdpa-progress|Downloaded 4.2 of 9.8 MB"
    assert r["view"]["actions"] == ["Retry"]          # offline: no reload from the network


def test_failure(results):
    r = results["a failure names the file and the step, stops, offers Retry, and is final"]
    assert r["error"] == "Loading packages: pyodide/packages.tar.gz is damaged"
    assert (r["file"], r["detail"], r["stopped"]) == ("pyodide/packages.tar.gz", "sha256 differs", 1)
    assert r["view"]["role"] == "alert" and r["view"]["title"] == "The app failed to start"
    assert "sdpa-error" in r["view"]["classes"] and r["view"]["problem"] == r["error"]
    assert r["view"]["progress"].startswith("sdpa-progress sdpa-idle|")
    assert r["acts"] == ["retry", "fresh"]
    assert r["errors"] == ["SDPA Lab: Loading packages: pyodide/packages.tar.gz is damaged\nsha256 differs"]
    assert r["watching"] is False and r["stalled"] is None


def test_page_files(results):
    assert results["the page's own files fail under 'Loading the page'"]["error"] == "Loading the page: boot.css did not load"


def test_live(results):
    r = results["live: the panel goes, and nothing fails or stalls afterwards"]
    assert r["gone"] and r["back"]
    assert (r["watching"], r["error"], r["stalled"]) == (False, None, None)
