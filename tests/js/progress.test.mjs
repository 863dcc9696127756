// build/templates/progress.js in a jsdom page: the boot's progress panel marks each step, says when one is
// stuck (and takes it back when news comes), names a failure's file or step with Retry, and goes when the
// page is live. A fake clock drives the watchdog; nothing waits. Run by `node --test` (make test).
import assert from "node:assert/strict";
import {after, test} from "node:test";

import {loadTemplate} from "./template.mjs";

const STEPS = [["page", "Page and plots drawn"], ["runtime", "Starting Python (Pyodide runtime)"],
               ["packages", "Loading packages"], ["app", "Running the app"]];

// a page with progress.js loaded, before or after its body is parsed
const pages = [];
function page({parsed = true, online = true} = {}) {
  const {dom, w} = loadTemplate("progress.js", {
    before(w) {
      if (!parsed) w.document.body.remove();     // as boot.js runs from <head>
      Object.defineProperty(w.navigator, "onLine", {get: () => online});
      w.errors = [];
      w.console.error = (text) => w.errors.push(text);
    },
  });
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
after(() => pages.forEach((p) => p.dom.window.close()));     // and with them each page's watchdog interval

test("steps are marked in order, each with the time it started", () => {
  const p = page();
  assert.deepEqual(p.view().steps, ["page:sdpa-done:Page and plots drawn",
                                    "runtime:sdpa-current:Starting Python (Pyodide runtime)",
                                    "packages::Loading packages", "app::Running the app"]);
  p.log.clock = 2;
  p.progress.mark("packages");
  p.log.clock = 3;
  p.progress.mark("packages", "Loading packages (numpy)");
  p.progress.mark("app");
  assert.deepEqual(p.view().steps, ["page:sdpa-done:Page and plots drawn",
                                    "runtime:sdpa-done:Starting Python (Pyodide runtime)",
                                    "packages:sdpa-done:Loading packages (numpy)", "app:sdpa-current:Running the app"]);
  assert.deepEqual({...p.lab.steps}, {runtime: 0, packages: 2000, app: 3000});     // a step's start is kept
  assert.equal(p.view().role, "status");
});

test("a panel made before the body is parsed appears with it, steps ahead", () => {
  const p = page({parsed: false});
  assert.equal(p.panel(), null);
  p.progress.mark("app");
  p.w.document.documentElement.appendChild(p.w.document.createElement("body"));
  p.w.document.dispatchEvent(new p.w.Event("DOMContentLoaded"));
  assert.equal(p.view().steps.at(-1), "app:sdpa-current:Running the app");
});

test("quiet within the limit, then stuck, then news takes the notice back", () => {
  const p = page();
  assert.equal(p.progress.check(), true);
  p.log.clock = 100;
  p.progress.check();
  assert.equal(p.lab.stalled, null);           // no worker yet and no download: not watched
  p.log.started = true;
  p.progress.mark("packages");
  p.progress.news();
  p.log.clock = 159;
  p.progress.check();
  assert.equal(p.lab.stalled, null);
  p.log.clock = 161;
  p.progress.check();
  assert.equal(p.lab.stalled, "Loading packages has shown no progress for 61 s.");
  const stuck = p.view();
  assert.equal(stuck.problem, p.lab.stalled);
  assert.match(stuck.classes, /\bsdpa-stalled\b/);
  assert.deepEqual(stuck.actions, ["Retry", "Reload from the network"]);
  p.progress.news();
  const back = p.view();
  assert.equal(p.lab.stalled, null);
  assert.equal(back.problem, null);
  assert.equal(back.actions, null);
  assert.doesNotMatch(back.classes, /\bsdpa-stalled\b/);
});

test("a download is stuck after its own limit and names the files", () => {
  const p = page({online: false});
  p.progress.mark("packages");
  p.progress.waitingFor(["pyodide/packages.tar.gz", "pyodide/python_stdlib.zip.gz"]);
  p.progress.downloaded(4.2e6, 9.8e6);
  p.log.clock = 21;
  p.progress.check();
  assert.equal(p.lab.stalled, "Loading packages: nothing has arrived for 21 s; still waiting for "
                              + "pyodide/packages.tar.gz, pyodide/python_stdlib.zip.gz.");
  assert.equal(p.view().progress, "sdpa-progress|Downloaded 4.2 of 9.8 MB");
  assert.deepEqual(p.view().actions, ["Retry"]);          // offline: no reload from the network
});

test("a failure names the file and the step, stops, offers Retry, and is final", () => {
  const p = page();
  p.progress.mark("packages");
  p.progress.downloaded(9.8e6, 9.8e6);
  p.progress.fatal("pyodide/packages.tar.gz is damaged", {file: "pyodide/packages.tar.gz", detail: "sha256 differs"});
  p.progress.fatal("a second failure");
  p.log.clock = 1000;
  assert.equal(p.progress.check(), false);
  p.panel().querySelector('[data-act="retry"]').click();
  p.panel().querySelector('[data-act="fresh"]').click();
  p.panel().querySelector(".sdpa-actions").click();        // not on a button: nothing
  const view = p.view();
  assert.equal(p.lab.error, "Loading packages: pyodide/packages.tar.gz is damaged");
  assert.deepEqual([p.lab.errorFile, p.lab.errorDetail, p.log.stopped], ["pyodide/packages.tar.gz", "sha256 differs", 1]);
  assert.equal(view.role, "alert");
  assert.equal(view.title, "The app failed to start");
  assert.match(view.classes, /\bsdpa-error\b/);
  assert.equal(view.problem, p.lab.error);
  assert.ok(view.progress.startsWith("sdpa-progress sdpa-idle|"), view.progress);
  assert.deepEqual(p.log.acts, ["retry", "fresh"]);
  assert.deepEqual([...p.w.errors], ["SDPA Lab: Loading packages: pyodide/packages.tar.gz is damaged\nsha256 differs"]);
  assert.equal(p.lab.stalled, null);
});

test("the page's own files fail under 'Loading the page'", () => {
  const p = page();
  p.progress.fatal("boot.css did not load", {file: "boot.css", step: "page"});
  assert.equal(p.lab.error, "Loading the page: boot.css did not load");
});

test("live: the panel goes, and nothing fails or stalls afterwards", () => {
  const p = page();
  p.log.started = true;
  p.progress.done();
  p.lab.ready = true;
  assert.equal(p.panel(), null);
  p.progress.fatal("too late");
  p.log.clock = 1000;
  assert.equal(p.progress.check(), false);
  assert.equal(p.lab.error, null);
  assert.equal(p.lab.stalled, null);
  assert.equal(p.panel(), null);
});
