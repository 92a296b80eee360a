// Drives the lab's Eval tab in Debian's Chromium: the report of `gatehouse eval --record
// DIR` shown by `gatehouse lab --eval DIR`, and a failed check opened in the explorer. Run
// by crates/cli/tests/end_to_end/lab_browser.rs:
//
//   node tests/browser/lab_eval.mjs <lab URL with token> <failed task id> [screenshot dir]
//
// Exits 0 when every check passed; prints the failing check and exits 1 otherwise.
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { launch } from "./chromium.mjs";

const [url, failedTask, shots = "target/lab-screenshots"] = process.argv.slice(2);
if (!url || !failedTask) {
  console.error("usage: node lab_eval.mjs <lab URL> <failed task id> [screenshot dir]");
  process.exit(2);
}
mkdirSync(shots, { recursive: true });
const T = 30_000;
const log = (...a) => console.log("[lab_eval.mjs]", ...a);
function check(ok, what) {
  if (!ok) throw new Error(`check failed: ${what}`);
  log("ok:", what);
}

const browser = await launch("lab-eval-chromium-", { width: 1440, height: 1000 });
const page = browser.pages()[0] || await browser.newPage();
const problems = [];
page.on("pageerror", (e) => problems.push(`page error: ${e.message}`));
page.on("console", (m) => { if (m.type() === "error") problems.push(`console error: ${m.text()}`); });
try {
  await page.goto(url);
  await page.locator("#eval-tab").waitFor({ state: "visible", timeout: T });
  await page.click("#eval-tab");
  await page.locator("#tab-eval").waitFor({ state: "visible", timeout: T });
  const title = await page.textContent("#eval-title");
  check(title.includes("2 task(s) × 2 variant(s) × 1 run(s)"), `the suite is named with its size: ${title}`);
  const variants = await page.locator("#eval-totals tbody tr").count();
  check(variants === 2, `a row per variant (${variants})`);
  const against = await page.textContent("#eval-totals tbody tr:nth-child(2)");
  check(against.includes("points"), `the second variant is set against the first: ${against}`);
  const tasks = await page.locator("#eval-tasks tbody tr").count();
  check(tasks === 2, `a row per task (${tasks})`);
  const failed = page.locator("#eval-failed button", { hasText: failedTask }).first();
  await failed.waitFor({ state: "visible", timeout: T });
  await page.screenshot({ path: join(shots, "eval-report.png"), fullPage: true });
  await failed.click();
  await page.locator("#tab-explorer").waitFor({ state: "visible", timeout: T });
  await page.locator("#ex-list tbody tr").first().waitFor({ state: "visible", timeout: T });
  const rows = await page.locator("#ex-list tbody tr").count();
  check(rows > 4, `the failed run's messages are in the explorer (${rows})`);
  const listed = await page.textContent("#ex-list tbody");
  check(listed.includes("tools/call") || listed.includes("call "), "its calls are among them");
  const source = await page.inputValue("#ex-source");
  check(source.includes(failedTask), `the explorer says which run it shows: ${source}`);
  await page.screenshot({ path: join(shots, "eval-explorer.png"), fullPage: true });
  check(problems.length === 0, `no page errors: ${problems.join("; ")}`);
  log("all checks passed");
} catch (e) {
  console.log(String(e && e.message ? e.message : e));
  await page.screenshot({ path: join(shots, "eval-failed.png"), fullPage: true }).catch(() => {});
  process.exitCode = 1;
} finally {
  await browser.close();
}
