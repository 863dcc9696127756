"""build/templates/slices.js in Node: BokehJS's first draw in slices, with stand-ins for BokehJS's view
classes that record in which task each step ran. Each root and each plot starts in a task of its own,
each plot paints in a later task of its own before the draw is done, nothing changes outside the draw,
and a BokehJS whose internals moved draws in one piece and says so."""
from __future__ import annotations

import json
import subprocess

import pytest

from node_tools import node
from sitebuild import ROOT

RUN = r"""
const fs = require("node:fs");
const vm = require("node:vm");
const source = fs.readFileSync(process.argv[1], "utf8");

let task = 0;
const nextTask = () => new Promise((resolve) => setImmediate(() => { task++; resolve(); }));

function bokeh({moved = false} = {}) {
  const log = [];
  class View { constructor(parent, name) { this.parent = parent; this.name = name; this.is_destroyed = false; } }
  class UIElementView extends View { async lazy_initialize() { log.push([task, "build", this.name]); } }
  class PlotView extends UIElementView {
    async lazy_initialize() { await super.lazy_initialize(); }
    paint() { log.push([task, "paint", this.name]); if (this.then) this.then(); }
  }
  class VisualProperties { _get_css_value(name) { return `css ${name}`; } }
  const modules = {"models/ui/ui_element": {UIElementView}, "models/plots/plot_canvas": moved ? {} : {PlotView},
                   "core/visuals/visual": {VisualProperties}};
  return {log, View, UIElementView, PlotView, VisualProperties, Bokeh: {require: (m) => modules[m]}};
}

// As Bokeh.embed.embed_items draws: each root built, then laid out (its plots painted during the layout).
function embed(b, {plots = ["p1", "p2"], hooks = {}} = {}) {
  return async () => {
    const header = new b.UIElementView(null, "header");
    await header.lazy_initialize();
    b.log.push([task, "layout", "header"]);
    const main = new b.UIElementView(null, "main");
    await main.lazy_initialize();
    const views = plots.map((name) => Object.assign(new b.PlotView(main, name), hooks[name] || {}));
    for (const view of views) await view.lazy_initialize();
    b.log.push([task, "layout", "main"]);
    for (const view of views) view.paint();
    return {views};
  };
}

async function run(slicer, b, draw) {
  const start = task;
  const result = await slicer(b.Bokeh, draw);
  b.log.push([task, "resolved", typeof result]);
  return {log: b.log.map(([t, what, name]) => [t - start, what, name]), result: result !== undefined};
}

(async () => {
  const ctx = vm.createContext({console, MessageChannel, setImmediate});
  vm.runInContext(`${source};\nthis.sdpaSlicer = sdpaSlicer;`, ctx);
  const out = {};

  // the first draw, then a later draw (a view switch) with the same slicer
  let b = bokeh();
  let warned = [];
  let slicer = ctx.sdpaSlicer({nextTask, warn: (t) => warned.push(t)});
  out.first = await run(slicer, b, embed(b));
  b.log.length = 0;
  const later = new b.PlotView({}, "later");
  const before = task;
  await later.lazy_initialize();
  later.paint();
  out.outside = {log: b.log.map(([t, what, name]) => [t - before, what, name])};
  out.css = new b.VisualProperties()._get_css_value("text-color");
  out.warnedFirst = warned;

  // a paint that asks another plot to paint again; a plot removed before its paint; a draw within a draw
  b = bokeh();
  slicer = ctx.sdpaSlicer({nextTask, warn: (t) => warned.push(t)});
  const hooks = {p2: {then() { this.other.paint(); }}};
  const draw = embed(b, {plots: ["p1", "p2", "p3"], hooks});
  out.again = await run(slicer, b, async () => {
    const result = await draw();
    const [p1, p2, p3] = result.views;
    p2.other = p1;
    p3.is_destroyed = true;
    return result;
  });
  b.log.length = 0;
  out.nested = await run(slicer, b, () => slicer(b.Bokeh, embed(b, {plots: ["n1"]})));

  // BokehJS whose internals moved: the draw in one piece, said once
  b = bokeh({moved: true});
  warned = [];
  slicer = ctx.sdpaSlicer({nextTask, warn: (t) => warned.push(t)});
  out.moved = await run(slicer, b, embed(b));
  out.moved.warned = warned;
  out.moved.css = new b.VisualProperties()._get_css_value("text-color");
  process.stdout.write(JSON.stringify(out));
})();
"""


@pytest.fixture(scope="module")
def results() -> dict:
    done = subprocess.run([node(), "-e", RUN, str(ROOT / "build" / "templates" / "slices.js")],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def tasks(log, what):
    return {name: t for t, w, name in log if w == what}


def test_each_root_and_each_plot_starts_in_a_task_of_its_own(results):
    log = results["first"]["log"]
    built = [(t, name) for t, w, name in log if w == "build"]
    assert [name for _, name in built] == ["header", "main", "p1", "p2"]
    assert 0 < built[0][0] < built[1][0] < built[2][0] < built[3][0]     # none in the task that began the draw
    layout = tasks(log, "layout")
    assert layout["header"] == built[0][0] and layout["main"] == built[3][0]   # a root's layout follows its build


def test_each_plot_paints_later_in_a_task_of_its_own_before_the_draw_is_done(results):
    log = results["first"]["log"]
    paints = [(t, name) for t, w, name in log if w == "paint"]
    assert [name for _, name in paints] == ["p1", "p2"]
    layout = tasks(log, "layout")["main"]
    assert layout < paints[0][0] < paints[1][0]                       # not inside the layout, one per task
    assert log[-1][1] == "resolved" and log[-1][0] == paints[-1][0]   # done once the last has painted
    assert results["first"]["result"] is True


def test_outside_the_draw_bokeh_runs_as_it_does(results):
    # a plot built later (a view switch) starts at once and paints at once
    assert results["outside"]["log"] == [[0, "build", "later"], [0, "paint", "later"]]
    assert results["warnedFirst"] == []


def test_plots_read_no_css_variable(results):
    assert results["css"] == ""


def test_a_paint_asked_for_again_is_not_lost_and_a_removed_plot_is_not_painted(results):
    log = results["again"]["log"]
    painted = [name for _, w, name in log if w == "paint"]
    # p2's paint asks p1, painted already, to paint again: a second round paints it
    assert painted == ["p1", "p2", "p1"] and "p3" not in painted
    assert log[-1][1] == "resolved"


def test_a_draw_within_a_draw_runs_inside_the_outer_one(results):
    log = results["nested"]["log"]
    assert [name for _, w, name in log if w == "paint"] == ["n1"]
    assert tasks(log, "layout")["main"] < tasks(log, "paint")["n1"]


def test_bokeh_whose_internals_moved_draws_in_one_piece_and_says_so(results):
    moved = results["moved"]
    assert {t for t, _, _ in moved["log"]} == {0}                     # every step in one task
    assert [name for _, w, name in moved["log"] if w == "paint"] == ["p1", "p2"]
    assert moved["warned"] == ["SDPA Lab: BokehJS's internals moved (models/plots/plot_canvas: PlotView.lazy_initialize "
                               "is gone); its first draw runs in one piece"]
    assert moved["css"] == "css text-color"                          # nothing patched
