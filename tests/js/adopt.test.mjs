// build/templates/adopt.js: when the page keeps its pre-rendered views and which live values it takes (the
// patch), or when it must draw the live document anew. Each case is two small Bokeh documents written here;
// adopt.js runs as boot.js includes it (plain functions, by text).
import assert from "node:assert/strict";
import {test} from "node:test";

import {runTemplates} from "./template.mjs";

await runTemplates("adopt.js");
const {sdpaAdoptEvents, sdpaModelsOf} = globalThis;

const doc = (...roots) => ({d: {roots, title: "SDPA Lab"}});
const model = (id, name, attributes = {}) => ({type: "object", name, id, attributes});
const slider = (value = 64, more = {}) => model("p2", "Slider", {value, title: "d_k", ...more});
// a column holding an HTML pane and a slider: three models, nested as Bokeh writes them
const page = (sliderModel, text = "<p>87%</p>") =>
  doc(model("p1", "Column", {children: [model("p3", "HTML", {text}), sliderModel]}));

// name: [drawn, live, {moved, notDrawn, sameFiles}, the events adopting it takes, or null: draw anew]
const CASES = {
  "the same document": [page(slider()), page(slider()), {}, []],
  "a live value that differs": [page(slider()), page(slider(), "<p>86%</p>"), {},
                                [{kind: "ModelChanged", model: {id: "p3"}, attr: "text", new: "<p>86%</p>"}]],
  "a value the reader has moved stays": [page(slider(64)), page(slider(512)), {moved: ["p2.value"]}, []],
  "the reader's move does not hide another attribute": [
    page(slider(64, {end: 10})), page(slider(512, {end: 12})), {moved: ["p2.value"]},
    [{kind: "ModelChanged", model: {id: "p2"}, attr: "end", new: 12}]],
  "an attribute back to its default": [page(slider(64, {disabled: true})), page(slider()), {}, null],
  "another type under an id": [page(slider()), page(model("p2", "Spinner", {value: 64})), {}, null],
  "a model more": [page(slider()), doc(model("p1", "Column", {children: [model("p3", "HTML", {text: "<p>87%</p>"}),
                                                                         slider(), model("p4", "Button")]})), {}, null],
  "a model the page has not drawn": [page(slider()), page(slider()), {notDrawn: ["p3"]}, null],
  "one stylesheet file under two URLs": [
    page(slider(64, {stylesheets: [model("s1", "ImportedStyleSheet", {url: "./css/a.css?v=1"})]})),
    page(slider(64, {stylesheets: [model("s1", "ImportedStyleSheet", {url: "https://x.invalid/css/a.css"})]})),
    {sameFiles: [["https://x.invalid/css/a.css", "./css/a.css?v=1"]]}, []],
};

for (const [name, [drawn, live, {moved = [], notDrawn = [], sameFiles = []}, want]] of Object.entries(CASES)) {
  test(name, () => {
    const got = sdpaAdoptEvents(sdpaModelsOf(drawn), sdpaModelsOf(live),
                                {drawnHere: (id) => !notDrawn.includes(id), moved: new Set(moved),
                                 sameFile: (a, b) => sameFiles.some(([x, y]) => x === a && y === b)});
    assert.deepEqual(got, want);
  });
}
