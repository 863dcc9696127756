// Page side of the app: starts the Python worker, shows each loading step, swaps the
// pre-rendered first paint for the live document, syncs patches (Panel's protocol),
// and registers the service worker that makes the next visit work offline.
"use strict";
(() => {
  const STEPS = [
    ["page", "Page and plots drawn"],
    ["runtime", "Starting Python (Pyodide runtime)"],
    ["packages", "Loading packages"],
    ["import", "Importing Panel and Bokeh"],
    ["app", "Running the app"],
    ["render", "Drawing the live page"],
  ];
  // Timings in ms since navigation start (performance.now()), read by tests and build/measure_site.py.
  const lab = window.sdpaLab = {steps: {}, latencies: [], ready: false, offlineReady: false};
  const worker = new Worker("./worker.js");
  worker.busy = false;
  worker.queue = [];
  let patching = 0;
  let sentAt = null;

  // Progress panel: one line per step, the current one announced to screen readers.
  const panel = document.createElement("div");
  panel.id = "sdpa-boot";
  panel.setAttribute("role", "status");
  panel.setAttribute("aria-live", "polite");
  panel.innerHTML = `<strong>Starting SDPA Lab in your browser</strong><ol>${
    STEPS.map(([id, label]) => `<li data-step="${id}">${label}</li>`).join("")}</ol><p class="sdpa-note">Nothing is installed and nothing leaves this tab.</p>`;
  let current = "runtime";
  const mark = (id, msg) => {
    if (!(id in lab.steps)) lab.steps[id] = performance.now();   // when the step started
    current = id;
    let seen = false;
    for (const li of panel.querySelectorAll("li")) {
      const current = li.dataset.step === id;
      if (current) {
        seen = true;
        if (msg) li.textContent = msg;
      }
      li.className = current ? "sdpa-current" : (seen ? "" : "sdpa-done");
    }
  };
  const showPanel = () => {
    document.body.appendChild(panel);
    mark(current);      // the worker may be steps ahead of the DOM
  };
  if (document.body) showPanel(); else document.addEventListener("DOMContentLoaded", showPanel);
  window.addEventListener("load", () => { lab.steps.page = performance.now(); });

  function sendChange(jsdoc, event) {
    if ((event.setter_id != null && event.setter_id === "py") || patching > 0) return;
    if (worker.busy && event.model && event.attr) {
      worker.queue = worker.queue.filter((e) => !(e.model === event.model && e.attr === event.attr));
      worker.queue.push(event);
      return;
    }
    worker.busy = true;
    sentAt = performance.now();
    worker.postMessage({type: "patch", patch: jsdoc.create_json_patch([event])});
  }

  // Python renders its stylesheets from Panel's server-style paths; point them at our copy too.
  const local = (json) => json.replaceAll('"static/extensions/panel/', '"./@@PANEL_DIST@@');

  worker.onmessage = async (event) => {
    const msg = event.data;
    if (msg.type === "idle") {
      if (worker.queue.length) {
        const patch = worker.jsdoc.create_json_patch(worker.queue);
        worker.queue = [];
        sentAt = performance.now();
        worker.postMessage({type: "patch", patch});
      } else {
        worker.busy = false;
      }
    } else if (msg.type === "status") {
      mark(msg.step, msg.msg);
    } else if (msg.type === "error") {
      panel.classList.add("sdpa-error");
      panel.querySelector("strong").textContent = `The app failed to start: ${msg.msg}`;
      lab.error = msg.detail;
    } else if (msg.type === "render") {
      const docs_json = JSON.parse(local(msg.docs_json));
      const render_items = JSON.parse(msg.render_items);
      const root_ids = JSON.parse(msg.root_ids);
      const data_roots = [];
      for (const el of document.querySelectorAll("[data-root-id]")) {
        data_roots.push([el.getAttribute("data-root-id"), el.id]);
      }
      data_roots.sort((a, b) => (a[0] < b[0] ? -1 : 1));
      const roots = {};
      data_roots.forEach(([, id], i) => { roots[root_ids[i]] = id; });
      render_items[0].roots = roots;
      render_items[0].root_ids = root_ids;
      // The live document replaces the pre-rendered one in place, root by root.
      Bokeh.index.roots.map((v) => v.remove());
      for (const el of document.querySelectorAll("[data-root-id]")) el.innerHTML = "";
      const [views] = await Bokeh.embed.embed_items(docs_json, render_items);
      worker.jsdoc = [...views.roots.values()][0].model.document;
      worker.jsdoc.on_change(sendChange.bind(null, worker.jsdoc), false);
      worker.postMessage({type: "rendered"});
      worker.postMessage({type: "location", location: JSON.stringify(window.location)});
    } else if (msg.type === "ready") {
      document.body.classList.remove("pn-loading", "pn-arc");
      lab.steps.interactive = performance.now();
      lab.ready = true;
      document.documentElement.dataset.sdpaReady = "true";
      panel.remove();
      registerServiceWorker();
    } else if (msg.type === "patch") {
      try {
        patching += 1;
        worker.jsdoc.apply_json_patch(msg.patch, msg.buffers);
      } finally {
        patching -= 1;
      }
      if (sentAt !== null) {
        lab.latencies.push(performance.now() - sentAt);
        sentAt = null;
      }
    }
  };

  // Offline after one visit. Registered once the app runs, so precaching never competes
  // with the first boot for bandwidth (it mostly revalidates what the browser just fetched).
  function registerServiceWorker() {
    if (!("serviceWorker" in navigator)) return;
    navigator.serviceWorker.register("./sw.js", {scope: "./"}).then((reg) => {
      if (!reg) return;     // registration refused (e.g. blocked by a test harness)
      reg.addEventListener("updatefound", () => {
        const incoming = reg.installing;
        incoming.addEventListener("statechange", () => {
          if (incoming.state === "installed" && navigator.serviceWorker.controller) notifyUpdate(incoming);
        });
      });
      if (reg.waiting && navigator.serviceWorker.controller) notifyUpdate(reg.waiting);
    }).catch((err) => console.warn("service worker not registered:", err));
    navigator.serviceWorker.ready.then(() => {
      lab.offlineReady = true;
      document.documentElement.dataset.sdpaOffline = "true";
    });
  }

  function notifyUpdate(waiting) {
    if (document.getElementById("sdpa-update")) return;
    const bar = document.createElement("div");
    bar.id = "sdpa-update";
    bar.setAttribute("role", "alert");
    bar.innerHTML = 'A new version of SDPA Lab is ready. <button type="button">Reload</button>';
    bar.querySelector("button").addEventListener("click", () => {
      navigator.serviceWorker.addEventListener("controllerchange", () => location.reload());
      waiting.postMessage({type: "skipWaiting"});
    });
    document.body.appendChild(bar);
  }
})();
