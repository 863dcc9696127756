// Lighthouse (npm lighthouse, installed from package.json) on one page load of the built site, in
// Chromium, with the measurement window lasting until the page says it is live (window.sdpaLab.ready):
// the layout shift of swapping the pre-rendered page for the live one is part of what a user sees.
//
//   node tests/build/lighthouse_flow.mjs <url> <desktop|mobile> <report.json>
//
// Prints {categories: {id: score}, cls, failing: [[category, audit id, score, title]], ready, error}.
// CHROME_PATH names the browser (Debian's /usr/bin/chromium in the tests).
import fs from "node:fs";
import puppeteer from "puppeteer-core";
import {startFlow, desktopConfig} from "lighthouse";

const [url, formFactor, reportPath] = process.argv.slice(2);
const CATEGORIES = ["performance", "accessibility", "best-practices", "seo"];
const BOOT_MS = 120_000;

const browser = await puppeteer.launch({
  executablePath: process.env.CHROME_PATH || "/usr/bin/chromium",
  headless: true,
  args: ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-quic"],
});
try {
  const page = await browser.newPage();
  const base = formFactor === "desktop" ? desktopConfig : {extends: "lighthouse:default"};
  const config = {...base, settings: {...(base.settings || {}), onlyCategories: CATEGORIES}};
  const flow = await startFlow(page, {config, name: `SDPA Lab (${formFactor})`});
  let state = {ready: false, error: null};
  await flow.navigate(async () => {
    await page.goto(url);
    await page.waitForFunction("window.sdpaLab && (window.sdpaLab.ready || window.sdpaLab.error)",
                               {timeout: BOOT_MS, polling: 200});
    state = await page.evaluate("({ready: window.sdpaLab.ready, error: window.sdpaLab.error})");
  }, {name: "first visit"});
  const lhr = (await flow.createFlowResult()).steps[0].lhr;
  fs.writeFileSync(reportPath, JSON.stringify(lhr));
  const failing = [];
  for (const id of CATEGORIES) {
    for (const ref of lhr.categories[id].auditRefs) {
      const audit = lhr.audits[ref.id];
      if (ref.weight > 0 && audit.score !== null && audit.score < 1) {
        failing.push([id, ref.id, audit.score, audit.title]);
      }
    }
  }
  process.stdout.write(JSON.stringify({
    categories: Object.fromEntries(CATEGORIES.map((id) => [id, lhr.categories[id].score])),
    cls: lhr.audits["cumulative-layout-shift"].numericValue,
    failing, ...state, runtimeError: lhr.runtimeError || null,
  }) + "\n");
} finally {
  await browser.close();
}
