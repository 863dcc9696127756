// ESLint for the browser runtime's sources (make lint, through tools/lint_js.py) and the tests' Node scripts.
// The runtime is ES modules in build/templates/ (bundled by build/bundle.py into boot.js, worker.js and sw.js):
// each is linted as written, with its own line numbers, in the global scope it runs in.
import js from "@eslint/js";
import globals from "globals";

const unused = ["error", {argsIgnorePattern: "^_", caughtErrorsIgnorePattern: "^_", varsIgnorePattern: "^_"}];
const module = (names, scope) => ({
  files: names.map((name) => `build/templates/${name}.js`),
  languageOptions: {ecmaVersion: 2022, sourceType: "module", globals: scope},
});

export default [
  js.configs.recommended,
  {rules: {"no-unused-vars": unused}},
  // the page's modules: BokehJS is the page's global once its deferred script has run
  module(["boot", "adopt", "bokeh_leaks", "bokehjs_internals", "early", "firstpaint", "patches", "progress", "setup", "slices", "snapmaker", "start"],
         {...globals.browser, Bokeh: "readonly"}),
  // the Python worker's: Pyodide's loader is evaluated into its global scope (scripts.js)
  module(["worker", "archive", "download", "prefetch", "pyodide_internals", "scripts", "snapshot", "store", "warmboot"],
         {...globals.worker, loadPyodide: "readonly"}),
  module(["nowebrtc"], {...globals.browser, ...globals.worker}),      // in both
  module(["sw"], globals.serviceworker),
  {files: ["**/*.mjs", "**/*.cjs"], languageOptions: {ecmaVersion: 2022, globals: globals.node}},
];
