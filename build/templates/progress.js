// The boot's progress panel (a module of boot.js, tested in Node by tests/js/progress.test.mjs):
// one line per step, the current one announced to screen readers; a step without news for too long
// is said to be stuck (the boot may still finish; then the notice goes), and a failure names the file,
// else the step, and offers Retry.
//
// steps: [[id, label], ...] in boot order; limits: seconds without news per step, and `download`
// (no byte arrived) for a step waiting on files; act(name): the reader chose "retry" or "fresh";
// stop(): the boot cannot go on (stop the worker); started(): whether the watchdog should watch.
export function sdpaProgress({lab, steps, limits, act, stop, started, now = () => performance.now()}) {
  const labels = Object.fromEntries(steps);
  const panel = document.createElement("div");
  panel.id = "sdpa-boot";
  panel.setAttribute("role", "status");
  panel.setAttribute("aria-live", "polite");
  panel.innerHTML = `<strong>Starting SDPA Lab in your browser</strong><ol>${
    steps.map(([id, label]) => `<li data-step="${id}">${label}</li>`).join("")}</ol>` +
    '<p class="sdpa-progress sdpa-idle"></p><p class="sdpa-problem" hidden></p>' +
    '<p class="sdpa-actions" hidden><button type="button" data-act="retry">Retry</button> ' +
    '<button type="button" data-act="fresh">Reload from the network</button></p>' +
    '<p class="sdpa-note">Until it is live, the page is a preview at this view\'s default settings. ' +
    'Nothing is installed and nothing leaves this tab.</p>';
  const part = (cls) => panel.querySelector(`.${cls}`);
  let current = "runtime";
  let lastNews = now();
  let waiting = [];          // files a download step is waiting for

  function mark(id, msg) {
    if (!(id in lab.steps)) lab.steps[id] = now();   // when the step started
    current = id;
    let seen = false;
    for (const li of panel.querySelectorAll("li")) {
      const here = li.dataset.step === id;
      if (here) {
        seen = true;
        if (msg) li.textContent = msg;
      }
      li.className = here ? "sdpa-current" : (seen ? "" : "sdpa-done");
    }
  }
  const show = () => {
    if (!lab.ready && !panel.isConnected) document.body.appendChild(panel);
    mark(current);      // the worker may be steps ahead of the DOM
  };
  if (document.body) show(); else document.addEventListener("DOMContentLoaded", show);

  part("sdpa-actions").addEventListener("click", (event) => {
    const name = event.target.dataset && event.target.dataset.act;
    if (name) act(name);
  });

  function showProblem(text) {
    part("sdpa-problem").textContent = text;
    part("sdpa-problem").hidden = false;
    part("sdpa-actions").hidden = false;
    // a reload that bypasses the caches only makes sense with a network
    panel.querySelector('[data-act="fresh"]').hidden = navigator.onLine === false;
    if (document.body && !panel.isConnected) document.body.appendChild(panel);
  }

  // The boot cannot go on: say what failed (the file, else the step), stop, offer Retry.
  function fatal(msg, {file = null, step = current, detail = null} = {}) {
    if (lab.error || lab.ready) return;
    const where = step === "page" ? "Loading the page" : (labels[step] || step);
    lab.error = `${where}: ${msg}`;
    lab.errorFile = file;
    lab.errorDetail = detail || msg;
    lab.stalled = null;
    stop();
    panel.classList.remove("sdpa-stalled");
    panel.classList.add("sdpa-error");
    panel.setAttribute("role", "alert");
    panel.querySelector("strong").textContent = "The app failed to start";
    part("sdpa-progress").classList.add("sdpa-idle");
    showProblem(lab.error);
    console.error(`SDPA Lab: ${lab.error}${detail ? "\n" + detail : ""}`);
  }

  function stalled(msg) {
    if (lab.error || lab.ready || lab.stalled === msg) return;
    lab.stalled = msg;
    panel.classList.add("sdpa-stalled");
    showProblem(msg);
  }

  // something arrived: a message, a byte of a download
  function news() {
    lastNews = now();
    if (lab.stalled && !lab.error) {
      lab.stalled = null;
      panel.classList.remove("sdpa-stalled");
      part("sdpa-problem").hidden = true;
      part("sdpa-actions").hidden = true;
    }
  }

  function downloaded(received, expected) {
    const line = part("sdpa-progress");
    // its room stays either way (see boot.css): the panel keeps one height
    line.classList.toggle("sdpa-idle", received >= expected || lab.error !== null);
    line.textContent = `Downloaded ${(received / 1e6).toFixed(1)} of ${(expected / 1e6).toFixed(1)} MB`;
  }

  // once a second: has the current step been quiet for longer than its limit?
  function check() {
    if (lab.ready || lab.error) return false;
    if (!started() && !waiting.length) return true;       // between worker.js and the worker
    const quiet = (now() - lastNews) / 1000;
    const limit = waiting.length ? limits.download : (limits[current] || 60);
    if (quiet < limit) return true;
    const label = labels[current] || current;
    stalled(waiting.length
      ? `${label}: nothing has arrived for ${Math.round(quiet)} s; still waiting for ${waiting.join(", ")}.`
      : `${label} has shown no progress for ${Math.round(quiet)} s.`);
    return true;
  }
  const watchdog = setInterval(() => check() || clearInterval(watchdog), 1000);

  return {
    mark, fatal, news, downloaded, check,
    get current() { return current; },
    waitingFor(files) { waiting = files; },
    // the page is live: the panel goes
    done() {
      lab.stalled = null;
      panel.remove();
    },
  };
}
