// One of build/templates/*.js in a jsdom page, as boot.js or worker.js would include it (plain functions, no
// module syntax): compiled with its own file name, so `node --test --experimental-test-coverage` reports
// the template's lines, not an eval's.
import fs from "node:fs";
import {createRequire} from "node:module";
import path from "node:path";
import {fileURLToPath} from "node:url";
import vm from "node:vm";

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..", "..");
export const TEMPLATES = path.join(ROOT, "build", "templates");

// jsdom from the project's npm tools (package.json; `make test` installs them with `npm ci`)
const {JSDOM} = createRequire(path.join(ROOT, "package.json"))("jsdom");

/** A fresh jsdom page with templates/<name> run in it. `before(window)` runs first (stubs, a page state). */
export function loadTemplate(name, {html = "<!doctype html><body></body>", before = () => {}} = {}) {
  const dom = new JSDOM(html, {runScripts: "outside-only"});
  const w = dom.window;
  before(w);
  const file = path.join(TEMPLATES, name);
  new vm.Script(fs.readFileSync(file, "utf8"), {filename: file}).runInContext(dom.getInternalVMContext());
  return {dom, w};
}

/** templates/<name>, each in turn, run in this process's global scope, as worker.js includes them by text
 * (what they define is then global here). Each test file runs in a process of its own under node --test. */
export function runTemplates(...names) {
  for (const name of names) {
    const file = path.join(TEMPLATES, name);
    vm.runInThisContext(fs.readFileSync(file, "utf8"), {filename: file});
  }
}

/** templates/<name> run in a fresh context holding only `globals` (as a page that has no more); returns the
 * context, where what the template defines is found. `exports` names its declarations to hand out. */
export function templateContext(name, globals = {}, exports = []) {
  const context = vm.createContext({...globals});
  const file = path.join(TEMPLATES, name);
  new vm.Script(fs.readFileSync(file, "utf8"), {filename: file}).runInContext(context);
  for (const declared of exports) context[declared] = vm.runInContext(declared, context);
  return context;
}
