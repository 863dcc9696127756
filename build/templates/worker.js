// The app in a Web Worker: Pyodide from this site, packages from a pre-solved lock,
// then Panel renders the document and talks to the page by JSON patches (Panel's protocol).
"use strict";
const CONFIG = /*CONFIG*/{}/*END*/;
const here = (path) => new URL(path, self.location).href;

// Every file Pyodide will fetch (runtime, stdlib, lock, each wheel) is requested right now, so the
// downloads run alongside the runtime's start-up instead of after it; Pyodide's own fetches of those
// URLs are handed these responses. Wheels carry their lock's sha256 as `integrity`, as Pyodide's would.
const early = new Map(CONFIG.prefetch.map(([path, integrity]) => {
  const url = here(path);
  const pending = fetch(url, integrity ? {integrity} : {});
  pending.catch(() => {});    // a failure surfaces where Pyodide awaits it, not as an unhandled rejection
  return [url, pending];
}));
const networkFetch = self.fetch.bind(self);
self.fetch = (input, init) => {
  const url = new URL(input instanceof Request ? input.url : input, self.location).href;
  const pending = early.get(url);
  if (pending === undefined) return networkFetch(input, init);
  early.delete(url);            // each response body can be read once
  return pending;
};

importScripts(CONFIG.pyodideJs.startsWith("http") ? CONFIG.pyodideJs : here(CONFIG.pyodideJs));

const status = (step, msg) => self.postMessage({type: "status", step, msg, t: performance.now()});

function sendPatch(patch, buffers) {
  self.postMessage({type: "patch", patch, buffers});
}

async function lockOptions() {
  const ours = here(CONFIG.lock);
  if (!CONFIG.runtimeLock) return {lockFileURL: ours};
  // Pyodide from its CDN (build without a distribution): its lock plus our wheels by absolute URL.
  const [theirs, mine] = await Promise.all([CONFIG.runtimeLock, ours].map((u) => fetch(u).then((r) => r.json())));
  for (const [name, entry] of Object.entries(mine.packages)) {
    theirs.packages[name] = {...entry, file_name: new URL(entry.file_name, ours).href};
  }
  return {lockFileContents: JSON.stringify(theirs)};
}

const APP = `
import os, sys
import web
_web = os.path.dirname(web.__file__)
if _web not in sys.path:
    sys.path.insert(0, _web)   # as under \`panel serve web/app.py\`: sibling modules import by name
from panel.io.pyodide import init_doc, write_doc
init_doc()
_path = os.path.join(_web, "app.py")
_ns = {"__name__": "bokeh_app_sdpa_lab", "__file__": _path}
from panel.io.state import state
# Each root the template adds makes Bokeh re-walk the whole model graph; walk it once, at the end.
with state.curdoc.models.freeze():
    exec(compile(open(_path).read(), _path, "exec"), _ns)
# init_doc() held every change made while the app was built. Replayed after the page has rendered
# the serialized document, they would name models the app created and dropped again (Bokeh's
# "reference <id> isn't known"). Run their Python callbacks now, before serializing, so the
# document JSON is the whole truth; hold again to collect what happens until the page links.
_doc = state.curdoc
_tmpl = state._templates.get(_doc)
if _tmpl is not None and _doc not in _tmpl._documents:
    _tmpl.server_doc(title=_tmpl.title, location=True, doc=_doc)
_doc.unhold()
_doc.hold()
await write_doc()
`;

async function start() {
  status("runtime", "Starting Python (Pyodide runtime)");
  const indexURL = CONFIG.pyodideJs.replace(/pyodide\.js$/, "");
  self.pyodide = await loadPyodide({
    indexURL: indexURL.startsWith("http") ? indexURL : here(indexURL),
    ...(await lockOptions()),
  });
  status("packages", `Loading packages: ${CONFIG.packages.join(", ")}`);
  await self.pyodide.loadPackage(CONFIG.packages, {messageCallback: () => {}, checkIntegrity: true});
  status("import", "Importing Panel and Bokeh");
  self.pyodide.globals.set("sendPatch", sendPatch);
  // Panel's asset URLs point at this site's copy (read when panel.io.resources is imported).
  self.pyodide.runPython(`import os\nos.environ["PANEL_CDN_ROOT"] = ${JSON.stringify(here(CONFIG.panelRoot))}\nimport panel, bokeh`);
  status("app", "Running the app");
  const [docs_json, render_items, root_ids] = await self.pyodide.runPythonAsync(APP);
  status("render", "Drawing the live page");
  self.postMessage({type: "render", docs_json, render_items, root_ids});
}

self.onmessage = async (event) => {
  const msg = event.data;
  if (msg.type === "rendered") {
    await self.pyodide.runPythonAsync(`
from panel.io.state import state
from panel.io.pyodide import _link_docs_worker
_link_docs_worker(state.curdoc, sendPatch, setter='js')
`);
    self.postMessage({type: "ready"});
  } else if (msg.type === "patch") {
    self.pyodide.globals.set("patch", msg.patch);
    try {
      await self.pyodide.runPythonAsync(`
from panel.io.state import state
from panel.io.pyodide import _convert_json_patch
state.curdoc.apply_json_patch(_convert_json_patch(patch), setter='js')
`);
    } finally {
      self.postMessage({type: "idle"});
    }
  } else if (msg.type === "location") {
    self.pyodide.globals.set("location", msg.location);
    await self.pyodide.runPythonAsync(`
import json
from panel.io.state import state
from panel.util import edit_readonly
if state.location:
    loc_data = json.loads(location)
    with edit_readonly(state.location):
        state.location.param.update({k: v for k, v in loc_data.items() if k in state.location.param})
`);
  }
};

start().catch((err) => {
  const lines = `${err}`.trim().split("\n");
  self.postMessage({type: "error", msg: lines[lines.length - 1], detail: `${err}`});
  throw err;
});
