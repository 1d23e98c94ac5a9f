// The HTML report in a real headless Chromium: it loads without console
// errors, the cgraph renders as SVG, the top critical state is shown,
// clicking a state shows its numbers, sorting, filtering, the timeline and
// the next path work, a large report stays usable, and an empty trace is
// refused. Then, on the demo, a real recording and a GPU trace (when the shared
// Kineto traces are beside the repository): the verdict is the first
// heading and reads as `analyze` says it, the table shows the critical
// rows and folds the others behind a toggle, the timeline has a lane per
// path SM (capped) and every lane has drawn states, numbers do not wrap,
// and the cgraph toggles between its critical subgraph and all of it; at
// 1400×1000 the first screen shows the verdict, the what-ifs and the
// timeline, with one line per kind of diagnostic that changes the answer
// and the rest folded. A trace of threads that nothing links draws every
// thread, the path's first, with the state names on the bars. A span
// file of many requests opens with the distribution of their lengths and
// the slowest against the rest, and links each slowest request to its own
// report; on 300 real requests of the OpenTelemetry example it names what
// bounds the slowest and the rest as the example's ground truth says. Screenshots are kept in tests/browser/artifacts/.

import { chromium } from "playwright-core";
import { execFileSync, spawnSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
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

/// `critpath ARGS` with COLUMNS unset and output piped: its standard output.
function cli(args) {
  const env = { ...process.env };
  delete env.COLUMNS;
  return execFileSync(bin, args, { env, stdio: ["ignore", "pipe", "ignore"], maxBuffer: 1 << 30 }).toString();
}

/// The shared Kineto trace NAME: `shared/data/kineto` beside the repository
/// or one of its parents; null when absent.
function sharedKineto(name) {
  for (let d = root; ; d = dirname(d)) {
    const p = join(d, "shared/data/kineto", name);
    if (existsSync(p)) return p;
    if (dirname(d) === d) return null;
  }
}

/// Whether the text of every element matching `sel` takes one line.
async function oneLine(page, sel) {
  return page.evaluate((sel) => [...document.querySelectorAll(sel)].filter((e) => {
    const text = [...e.childNodes].filter((n) => n.nodeType === 3 && n.textContent.trim()).pop();
    if (!text) return false;
    const r = document.createRange();
    r.selectNodeContents(text);
    return new Set([...r.getClientRects()].map((x) => Math.round(x.top))).size > 1;
  }).map((e) => e.textContent), sel);
}

/// The report of `trace` opens with the verdict, folds its table, draws a
/// lane per path SM with its states, keeps numbers on one line and toggles
/// the cgraph; screenshots in artifacts/report-LABEL.png.
async function explains(trace, label) {
  const file = report([trace], label + ".html");
  const doc = JSON.parse(cli(["analyze", trace, "--json", "--path"]));
  const verdict = cli(["analyze", trace]).split("\n")[0];
  const { page, errors } = await open(file);
  await firstScreen(page, doc, label);
  await page.setViewportSize({ width: 1200, height: 900 });
  check(errors.length === 0, label + ": no console errors " + JSON.stringify(errors));
  const heading = (await page.locator("h1, h2").first().innerText()).trim();
  check(verdict.startsWith("bound by ") && heading.startsWith(verdict) && (label === "gpu" || heading === verdict),
    label + ": the verdict is the first heading, as analyze says it: " + heading + " / " + verdict);
  const whatifs = await page.locator("#whatif li").allInnerTexts();
  check(whatifs.length >= 1 && whatifs[0].includes("2× faster →"), label + ": the what-if of the top states: " + JSON.stringify(whatifs));
  // The table: the critical rows shown, the others folded behind a toggle.
  const states = doc.states.length, critical = doc.states.filter((s) => s.critical_ns > 0).length;
  const rows = () => page.locator("#states tbody tr").count();
  check(await rows() === critical, label + ": the table shows the " + critical + " critical rows: " + await rows());
  if (critical < states) {
    const more = await page.locator("#more").innerText();
    check(more.includes("show " + (states - critical) + " more"), label + ": the toggle says how many are folded: " + more);
    await page.locator("#more").click();
    check(await rows() === Math.min(states, 2000), label + ": the toggle shows every row");
    await page.locator("#more").click();
    check(await rows() === critical, label + ": and folds them again");
  }
  // The timeline: a lane per path SM (capped at 24 with the rest said),
  // then the other SMs (at most 24 more), each with drawn states.
  const pathSms = new Set(doc.path.map((s) => (s.sys === "local" ? "" : s.sys + "/") + s.sm)).size;
  const lanes = await page.locator("#timeline-svg text.lane-label").count();
  check(lanes >= Math.min(pathSms, 16) && lanes <= 48, label + ": " + lanes + " lanes for " + pathSms + " SMs on the path");
  const roles = await page.locator("#timeline-svg text.lane-label").evaluateAll((ls) => ls.map((l) => l.dataset.role));
  const firstOther = roles.findIndex((r) => r !== "path");
  check(roles[0] === "path" && (firstOther === -1 || !roles.slice(firstOther).includes("path")),
    label + ": the path's lanes come first: " + JSON.stringify(roles));
  const empty = await page.evaluate((n) => [...Array(n).keys()].filter((i) => !document.querySelector(`#timeline-svg rect.st[data-lane="${i}"]`)), lanes);
  check(empty.length === 0, label + ": every lane has drawn states; empty: " + JSON.stringify(empty));
  check(await page.locator("#timeline-svg rect.seg").count() > 0, label + ": the path is drawn over the lanes");
  // Numbers do not wrap, even in a narrow window.
  await page.setViewportSize({ width: 800, height: 900 });
  const wrapped = await oneLine(page, "td.num, .card b, #whatif .len");
  check(wrapped.length === 0, label + ": numbers stay on one line; wrapped: " + JSON.stringify(wrapped.slice(0, 5)));
  await page.setViewportSize({ width: 1200, height: 900 });
  // The cgraph: the critical subgraph first, all of it on demand.
  if (await page.locator("#cg-toggle").isVisible()) {
    const before = await page.locator("#cgraph svg text").count();
    await page.locator("#cg-toggle").click();
    const after = await page.locator("#cgraph svg text").count();
    // (A graph the layout gives up on is a note saying so.)
    const gaveUp = after === 0 && (await page.locator("#cgraph p.note").innerText()).includes("could not be laid out");
    check((after > before && await page.locator("#cgraph svg").count() === 1) || gaveUp,
      label + ": the whole cgraph on demand: " + before + " -> " + after + " labels");
    await page.locator("#cg-toggle").click();
    check(await page.locator("#cgraph svg text").count() === before, label + ": and back to the critical subgraph");
  }
  // Zoom and pan by the buttons.
  for (const b of ["#tl-in", "#tl-in", "#tl-right", "#tl-out", "#tl-reset"]) await page.locator(b).click();
  check(errors.length === 0, label + ": zooming raises no errors " + JSON.stringify(errors));
  await page.evaluate(() => window.scrollTo(0, 0));
  await page.screenshot({ path: join(artifacts, "report-" + label + ".png") });
  await page.close();
}

/// At 1400×1000, before any scrolling: the verdict, the what-ifs and the
/// timeline's first lanes are on the screen, and the diagnostics take one
/// line per kind that changes the answer plus one folded line.
async function firstScreen(page, doc, label) {
  await page.setViewportSize({ width: 1400, height: 1000 });
  await page.evaluate(() => window.scrollTo(0, 0));
  const box = async (sel) => page.locator(sel).first().boundingBox();
  const verdict = await box("#verdict"), tl = await box("#timeline-svg");
  check(verdict && verdict.y >= 0 && verdict.y + verdict.height <= 1000, label + ": the verdict is on the first screen");
  if (doc.critical_path.found && (await page.locator("#whatif li").count()) > 0) {
    const w = await box("#whatif li:last-child");
    check(w.y + w.height <= 1000, label + ": the what-ifs are on the first screen (last at " + Math.round(w.y) + " px)");
  }
  if (tl) check(tl.y + Math.min(tl.height, 150) <= 1000, label + ": the timeline's first lanes are on the first screen (it starts at " + Math.round(tl.y) + " px)");
  const weighty = new Set(doc.diagnostics.filter((d) => d.severity === "changes-answer").map((d) => d.kind));
  const others = new Set(doc.diagnostics.filter((d) => d.severity !== "changes-answer").map((d) => d.kind));
  check(doc.diagnostics.every((d) => ["changes-answer", "worth-knowing", "routine"].includes(d.severity)), label + ": every JSON diagnostic has a severity");
  const lines = await page.locator("#diags > details.diag").count();
  check(lines === weighty.size + (others.size ? 1 : 0),
    label + ": " + lines + " diagnostic lines for " + weighty.size + " kinds that change the answer and " + others.size + " folded");
  if (others.size) {
    const fold = await page.locator("#morediags > summary").innerText();
    check(fold.startsWith("+ ") && [...others].every((k) => fold.includes(k)), label + ": the fold names the other kinds: " + fold);
  }
  await page.screenshot({ path: join(artifacts, "first-screen-" + label + ".png") });
}

/// Checks the report of a span file of many requests; returns its
/// `analyze --json` document.
async function manyRequests(spans, label) {
  const many = JSON.parse(cli(["analyze", spans, "--json"]));
  const mr = await open(report([spans], label.replace(/ /g, "-") + ".html"));
  check(mr.errors.length === 0, label + ": no console errors " + JSON.stringify(mr.errors));
  const sections = await mr.page.locator("section").evaluateAll((ss) => ss.map((s) => s.id));
  check(JSON.stringify(sections.slice(0, 3)) === JSON.stringify(["distribution", "tail", "states"]),
    label + ": the distribution, then the tail comparison, then the table: " + JSON.stringify(sections));
  const dist = await mr.page.locator("#distribution p").innerText();
  check(dist.startsWith(many.traces + " requests") && ["p50", "p90", "p99"].every((p) => dist.includes(p)),
    label + ": the distribution's percentiles: " + dist);
  check(await mr.page.locator("#distribution svg rect").count() >= 2, label + ": the histogram has bars");
  const tail = await mr.page.locator("#tail pre").innerText();
  const slowTop = many.slowest.slow_top;
  check(tail.includes(slowTop.sm + ": " + slowTop.state), label + ": the tail names what bounds the slowest: " + tail);
  const slowest = [...many.per_trace].sort((a, b) => b.length_ns - a.length_ns)[0].trace_id;
  await mr.page.locator(`#slowest ol a[href="#req-${slowest}"]`).click();
  check(await mr.page.locator(`#req-${slowest}`).evaluate((d) => d.open), label + ": the slowest request's link opens its report");
  const frame = mr.page.frameLocator(`#req-${slowest} iframe`);
  const inner = (await frame.locator("#verdict").innerText()).trim();
  const own = cli(["analyze", spans, "--trace", slowest]).split("\n")[0];
  check(inner.startsWith(own), label + ": its report's verdict is the request's own: " + inner + " / " + own);
  // Its timeline's times run from the request's start, named in UTC.
  const note = await frame.locator("#tlnote").innerText();
  check(/Times are from the start, \d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z \(UTC, wall clock\)/.test(note),
    label + ": the request's report names its wall-clock start: " + note);
  const ticks = await frame.locator("#timeline .tick").allTextContents();
  check(ticks.length > 0 && ticks.every((t) => t.startsWith("+")), label + ": the timeline's times are from the start: " + ticks);
  await mr.page.screenshot({ path: join(artifacts, "report-" + label.replace(/ /g, "-") + ".png") });
  return many;
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
  // Its 1,999 critical rows are shown, the others folded: unfold them.
  await w.page.locator("#more").click();
  check(await w.page.locator("#states tbody tr").count() === 2000, "100k transitions: the table stays small");

  // An empty trace is refused, as by every command: exit 2, no report.
  const empty = join(tmp, "empty.jsonl");
  writeFileSync(empty, "# nothing recorded\n");
  const refused = spawnSync(bin, ["report", empty, "-o", join(tmp, "empty.html")]);
  check(refused.status === 2 && !existsSync(join(tmp, "empty.html")), "an empty trace is refused, no report written");

  // Threads that nothing links (as in a trace without flow events): every
  // thread with states gets a lane, the path's first, then the busiest;
  // state names are written on the bars wide enough for them.
  const threads = join(tmp, "threads.jsonl");
  const rec = [];
  for (const [sm, busy] of [["MainThread", 0], ["logger", 20], ["producer", 160], ["consumer", 900]]) {
    rec.push({ t: 0, sm, ev: "state", state: busy ? "blocked:sleep" : "_thread.lock.acquire" });
    for (let i = 0; i < 4 && busy; i++) {
      rec.push({ t: 100 + i * 250, sm, ev: "state", state: "hash item" });
      rec.push({ t: 100 + i * 250 + busy / 4, sm, ev: "state", state: "blocked:sleep" });
    }
    // Every thread's states span the same time: only their busy time differs.
    if (busy) rec.push({ t: 1090, sm, ev: "state", state: "blocked:io" });
  }
  rec.push({ t: 1100, sm: "MainThread", ev: "state", state: "exit" }, { t: 1101, sm: "MainThread", ev: "end" });
  rec.sort((a, b) => a.t - b.t);
  writeFileSync(threads, rec.map((r) => JSON.stringify(r)).join("\n") + "\n");
  const th = await open(report([threads], "threads.html"));
  check(th.errors.length === 0, "unlinked threads: no console errors " + JSON.stringify(th.errors));
  const names = await th.page.locator("#timeline-svg text.lane-label").evaluateAll((ls) => ls.map((l) => l.firstChild.textContent));
  check(JSON.stringify(names) === JSON.stringify(["MainThread", "consumer", "producer", "logger"]),
    "unlinked threads: every thread has a lane, the path's first, then the busiest: " + JSON.stringify(names));
  const labels = await th.page.locator("#timeline-svg text.st-label").allTextContents();
  check(labels.includes("_thread.lock.acquire") && labels.includes("hash item") && labels.includes("blocked:sleep"), "unlinked threads: state names on the bars: " + JSON.stringify([...new Set(labels)]));
  await th.page.screenshot({ path: join(artifacts, "report-threads.png") });

  // Span files of many requests: the distribution first, then the slowest
  // against the rest, the table, and the slowest requests, whose links open
  // each one's own report. The three requests of examples/spans/otel, then
  // 300 real requests of the OpenTelemetry example (examples/otel/run.py:
  // four services on loopback, the real Python SDK), whose ground truth is
  // that db bounds the slowest tenth and cart the rest.
  await manyRequests(join(root, "examples/spans/otel/otlp.json"), "many requests");
  const python = join(root, "target/venv/bin/python");
  if (existsSync(python)) {
    const shop = join(tmp, "shop.json"), kinds = join(tmp, "shop-kinds.json");
    execFileSync(python, [join(root, "examples/otel/run.py"), "-n", "300", "-o", shop, "--report", kinds],
      { stdio: ["ignore", "inherit", "inherit"] });
    const doc = await manyRequests(shop, "300 requests");
    check(doc.traces === 300, "300 requests: all of them read: " + doc.traces);
    const slow = doc.slowest.slow_top;
    check(slow.sm === "db" && slow.state === "SELECT orders", "300 requests: db bounds the slowest tenth: " + JSON.stringify(slow));
    const top = [...doc.states].sort((a, b) => b.critical_ns_sum - a.critical_ns_sum)[0];
    check(top.sm === "cart", "300 requests: cart bounds the most time overall: " + JSON.stringify(top));
    const kindOf = Object.fromEntries(JSON.parse(readFileSync(kinds, "utf8")).map((r) => [r.trace_id, r.kind]));
    const slowest = [...doc.per_trace].sort((a, b) => b.length_ns - a.length_ns)[0].trace_id;
    check(kindOf[slowest] === "slow", "300 requests: the slowest request is one of the slow kind: " + slowest);
  } else {
    console.log("skip the 300-request report: target/venv is made by scripts/python-env.sh");
  }

  // The page explains: on the demo, a real recording and a GPU trace.
  await explains(cpt, "demo");
  await explains(join(root, "crates/os/tests/fixtures/contend.data"), "recording");
  const kineto = sharedKineto("alexnet.pt.trace.json.gz");
  if (kineto) await explains(kineto, "gpu");
  else console.log("skip the GPU report: shared/data/kineto is not beside the repository");
} finally {
  await browser.close();
}

if (failures > 0) {
  console.log(`${failures} browser check(s) failed`);
  process.exit(1);
}
console.log("all browser checks passed");
