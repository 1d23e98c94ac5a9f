// The HTML report in a real headless Chromium: it loads without console
// errors, the cgraph renders as SVG, the top critical state is shown,
// clicking a state shows its numbers, sorting, filtering, the timeline and
// the next path work, a large report stays usable, and an empty trace says
// so. Screenshots are kept in tests/browser/artifacts/.

import { chromium } from "playwright-core";
import { execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const root = resolve(here, "../..");
const bin = process.env.CRITPATH_BIN || join(root, "target/release/critpath");
const chromiumPath = process.env.CHROMIUM || "/usr/bin/chromium";
const artifacts = join(here, "artifacts");
mkdirSync(artifacts, { recursive: true });
const tmp = mkdtempSync(join(tmpdir(), "critpath-report-"));

let failures = 0;
function check(cond, what) {
  if (cond) {
    console.log("ok   " + what);
  } else {
    console.log("FAIL " + what);
    failures++;
  }
}

function report(args, name) {
  const out = join(tmp, name);
  execFileSync(bin, ["report", ...args, "-o", out], { stdio: ["ignore", "ignore", "inherit"] });
  return out;
}

const browser = await chromium.launch({
  executablePath: chromiumPath,
  headless: true,
  args: ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
    "--disable-component-update", "--disable-sync"],
});

async function open(file) {
  const page = await browser.newPage({ viewport: { width: 1400, height: 1100 } });
  const errors = [];
  const requests = [];
  page.on("console", (m) => { if (m.type() === "error") errors.push(m.text()); });
  page.on("pageerror", (e) => errors.push(String(e)));
  page.on("request", (r) => { if (!r.url().startsWith("file:")) requests.push(r.url()); });
  await page.goto("file://" + file);
  await page.waitForFunction(() => window.critpathReady === true, null, { timeout: 15000 });
  return { page, errors, requests };
}

try {
  // The paper's Figure 3 NIC scenario, with the next most critical path.
  const fig3 = report([join(root, "examples/nic-fig3.jsonl"), "--next"], "fig3.html");
  const { page, errors, requests } = await open(fig3);
  check(errors.length === 0, "no console errors: " + JSON.stringify(errors));
  check(requests.length === 0, "no network requests: " + JSON.stringify(requests));
  check(await page.locator("#cgraph svg").count() === 1, "the cgraph renders as SVG");
  check(await page.locator("#cgraph svg text").count() > 10, "the cgraph has labels");
  const first = await page.locator("#states tbody tr").first().innerText();
  check(first.includes("nic.tx") && first.includes("DMA packet") && first.includes("72.29%"), "the top critical state is shown first: " + first);
  check((await page.locator("#cards").innerText()).includes("830 ns"), "the summary gives the path length");
  // Clicking a state's label in the cgraph shows its numbers.
  await page.locator("#cgraph svg text.state-label", { hasText: "DMA packet" }).first().click();
  const panel = await page.locator("#panel").innerText();
  check(await page.locator("#panel").isVisible(), "the panel opens");
  check(panel.includes("visits 2") && panel.includes("total 600 ns") && panel.includes("critical 600 ns"), "clicking a state shows its numbers: " + panel);
  check(await page.locator("#states tr.sel").count() === 1, "the state's row is highlighted");
  // Sorting and filtering.
  await page.locator("#states th", { hasText: "visits" }).click();
  const top = await page.locator("#states tbody tr").first().innerText();
  check(top.includes("wait packet"), "sorting by visits puts the most visited first: " + top);
  await page.fill("#filter", "descfetch");
  const rows = await page.locator("#states tbody tr").count();
  check(rows === 3, "filtering keeps the matching rows: " + rows);
  // Timeline and next path.
  check(await page.locator("#timeline rect.seg").count() === 5, "the timeline draws the path's segments");
  const next = await page.locator("#nextbox").innerText();
  check(next.includes("340 ns") && next.includes("59.0% shorter"), "the next most critical path is beside the table: " + next);
  // Zoom the timeline and pan the cgraph without errors.
  await page.locator("#timeline svg").hover();
  await page.mouse.wheel(0, -300);
  await page.locator("#cgraph svg").hover();
  await page.mouse.wheel(0, 300);
  check(errors.length === 0, "zooming raises no errors");
  await page.screenshot({ path: join(artifacts, "report-fig3.png"), fullPage: true });

  // A large trace: the demo model (PCI, 20,000 sends); pruned, still usable.
  const cpt = join(tmp, "pci.cpt");
  execFileSync(bin, ["demo", "--bus", "pci", "-o", cpt], { stdio: "ignore" });
  const big = report([cpt], "pci.html");
  const b = await open(big);
  check(b.errors.length === 0, "large report: no console errors " + JSON.stringify(b.errors));
  const btop = await b.page.locator("#states tbody tr").first().innerText();
  check(btop.includes("DMA packet"), "large report: DMA packet on top: " + btop);
  check((await b.page.locator("#tlnote").innerText()).includes("hidden"), "large report: a visible note of the hidden segments");
  await b.page.screenshot({ path: join(artifacts, "report-pci.png") });

  // 100,000 distinct transitions: the graph and table are pruned, with notes.
  const wide = join(tmp, "wide.jsonl");
  const lines = [];
  for (let i = 0; i < 100000; i++) lines.push(JSON.stringify({ t: i * 10, sm: "sm" + (i % 50), ev: "state", state: "s" + i }));
  writeFileSync(wide, lines.join("\n") + "\n");
  const w = await open(report([wide], "wide.html"));
  check(w.errors.length === 0, "100k transitions: no console errors " + JSON.stringify(w.errors));
  check((await w.page.locator("#cgnote").innerText()).includes("hidden"), "100k transitions: the graph says what it hides");
  check((await w.page.locator("#tablenote").innerText()).includes("of 100000 states"), "100k transitions: the table says what it shows");
  check(await w.page.locator("#states tbody tr").count() === 2000, "100k transitions: the table stays small");

  // An empty trace says so plainly.
  const empty = join(tmp, "empty.jsonl");
  writeFileSync(empty, "# nothing recorded\n");
  const e = await open(report([empty], "empty.html"));
  check(e.errors.length === 0, "empty report: no console errors");
  check((await e.page.locator("#nopath").innerText()).includes("no records"), "an empty trace's report says so");
} finally {
  await browser.close();
}

if (failures > 0) {
  console.log(`${failures} browser check(s) failed`);
  process.exit(1);
}
console.log("all browser checks passed");
