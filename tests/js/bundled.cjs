// The runtime's ES modules (build/templates/*.js) bundled as build/bundle.py bundles them, for a test that runs
// them in a context of its own: a jsdom page, a bare vm context, or the global scope of a Node harness started by a
// Python test (CommonJS, so `node -e` scripts can require it). One bundle holds every module asked for, so the
// modules they share (download.js's BootError) exist once. An inline source map keeps the modules' own lines in
// stack traces and in `node --test --enable-source-maps`'s coverage.
"use strict";
const path = require("node:path");
const vm = require("node:vm");

const ROOT = path.resolve(__dirname, "..", "..");
const TEMPLATES = path.join(ROOT, "build", "templates");
// esbuild from the project's npm tools (package.json; `make test` installs them with `npm ci`)
const esbuild = require(require.resolve("esbuild", {paths: [ROOT]}));
const GLOBAL_NAME = "__sdpaModules";

/** templates/<names> in one script that leaves their exports in `__sdpaModules`. */
function bundled(...names) {
  const {outputFiles: [out]} = esbuild.buildSync({
    stdin: {contents: names.map((name) => `export * from "./${name}";`).join("\n"), resolveDir: TEMPLATES,
            sourcefile: "tests/js/bundled.js"},
    bundle: true, format: "iife", globalName: GLOBAL_NAME, write: false, sourcemap: "inline", charset: "utf8",
    target: "es2022", logLevel: "silent",
  });
  return out.text;
}

/** templates/<names> run in a vm context; each export becomes a global there. Returns the exports. */
function runInContext(context, ...names) {
  new vm.Script(bundled(...names), {filename: path.join(TEMPLATES, names.join("+"))}).runInContext(context);
  const modules = vm.runInContext(GLOBAL_NAME, context);
  for (const [name, value] of Object.entries(modules)) context[name] = value;
  return modules;
}

/** templates/<names> run in this process's global scope (a Node harness's); each export becomes global. */
function runInThisContext(...names) {
  vm.runInThisContext(bundled(...names), {filename: path.join(TEMPLATES, names.join("+"))});
  const modules = globalThis[GLOBAL_NAME];
  Object.assign(globalThis, modules);
  return modules;
}

module.exports = {ROOT, TEMPLATES, bundled, runInContext, runInThisContext};
