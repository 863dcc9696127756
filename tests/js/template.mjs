// The browser runtime's modules (build/templates/*.js, ES modules) for the tests in this folder, two ways:
// imported here as they are (runTemplates: what they export becomes global, as the tests call it), or bundled
// (bundled.cjs) and run in a jsdom page or a bare context (loadTemplate, templateContext). Either way
// `node --test --experimental-test-coverage --enable-source-maps` reports the modules' own lines, as long as a
// bundled module imports nothing: Node 20 maps the coverage of a bundle of several sources onto the wrong files, so a
// module with imports is tested imported (runTemplates).
import fs from "node:fs";
import {createRequire} from "node:module";
import path from "node:path";
import {fileURLToPath, pathToFileURL} from "node:url";
import vm from "node:vm";

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..", "..");
export const TEMPLATES = path.join(ROOT, "build", "templates");

// jsdom from the project's npm tools (package.json; `make test` installs them with `npm ci`)
const {JSDOM} = createRequire(path.join(ROOT, "package.json"))("jsdom");
const {runInContext} = createRequire(import.meta.url)("./bundled.cjs");

// A module run bundled must import nothing (see above): its coverage would land on the wrong files.
function alone(name) {
  if (/^import /m.test(fs.readFileSync(path.join(TEMPLATES, name), "utf8"))) {
    throw new Error(`templates/${name} imports other modules: test it imported (runTemplates), not bundled`);
  }
  return name;
}

/** A fresh jsdom page with templates/<name> run in it (what it exports is the page's global). `before(window)`
 * runs first (stubs, a page state). */
export function loadTemplate(name, {html = "<!doctype html><body></body>", before = () => {}} = {}) {
  const dom = new JSDOM(html, {runScripts: "outside-only"});
  const w = dom.window;
  before(w);
  runInContext(dom.getInternalVMContext(), alone(name));
  return {dom, w};
}

/** templates/<names> imported into this process, each export made global (as a test calls it). Each test file
 * runs in a process of its own under node --test. */
export async function runTemplates(...names) {
  for (const name of names) Object.assign(globalThis, await import(pathToFileURL(path.join(TEMPLATES, name)).href));
}

/** templates/<name> run in a fresh context holding only `globals` (as a page that has no more); returns the
 * context, where what the template exports is found. */
export function templateContext(name, globals = {}) {
  const context = vm.createContext({...globals});
  runInContext(context, alone(name));
  return context;
}
