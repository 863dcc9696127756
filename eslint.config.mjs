// ESLint for the browser runtime (make lint, through build/lint_js.py) and the tests' Node scripts.
// The runtime is linted as it ships: build/templates/*.js filled by build/render.py, so boot.js holds
// setup.js, firstpaint.js, progress.js, patches.js and adopt.js, and worker.js holds download.js, prefetch.js,
// snapshot.js, store.js and warmboot.js, as in the site.
import js from "@eslint/js";
import globals from "globals";

const unused = ["error", {argsIgnorePattern: "^_", caughtErrorsIgnorePattern: "^_", varsIgnorePattern: "^_"}];

export default [
  js.configs.recommended,
  {rules: {"no-unused-vars": unused}},
  {   // the page's script: BokehJS is the page's global once its deferred script has run
    files: ["**/boot.js"],
    languageOptions: {ecmaVersion: 2022, sourceType: "script", globals: {...globals.browser, Bokeh: "readonly"}},
  },
  {   // the Python worker: Pyodide's loader is evaluated into its global scope
    files: ["**/worker.js"],
    languageOptions: {ecmaVersion: 2022, sourceType: "script", globals: {...globals.worker, loadPyodide: "readonly"}},
  },
  {files: ["**/sw.js"], languageOptions: {ecmaVersion: 2022, sourceType: "script", globals: globals.serviceworker}},
  {files: ["**/*.mjs", "**/*.cjs"], languageOptions: {ecmaVersion: 2022, globals: globals.node}},
];
