// A wait on a condition, for the Node tests (tests/js) and the Node boot of the built site
// (tests/build/snapshot_node.mjs): checked after each turn of Node's event loop, failing after `seconds`.
import {setImmediate} from "node:timers";

export async function until(condition, what, seconds = 120) {
  const deadline = performance.now() + seconds * 1000;
  while (!condition()) {
    if (performance.now() > deadline) throw new Error(`not ${what} within ${seconds} s`);
    await new Promise((r) => setImmediate(r));
  }
}
