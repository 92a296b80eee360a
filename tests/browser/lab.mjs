// Drives `gatehouse lab` in Debian's Chromium, as a person would, and checks what the page
// shows. Run by crates/cli/tests/lab_browser.rs:
//
//   node tests/browser/lab.mjs <lab URL with token> [recording.jsonl] [screenshot dir]
//
// Exits 0 when every check passed; prints the failing check and exits 1 otherwise.
import { mkdirSync, readdirSync, rmSync } from "node:fs";
import { join } from "node:path";
import { launch } from "./chromium.mjs";

const [url, recording, shots = "target/lab-screenshots"] = process.argv.slice(2);
if (!url) {
  console.error("usage: node lab.mjs <lab URL> [recording.jsonl] [screenshot dir]");
  process.exit(2);
}
mkdirSync(shots, { recursive: true });
// Only this run's screenshots stay in the folder.
for (const f of readdirSync(shots)) if (f.endsWith(".png")) rmSync(join(shots, f), { force: true });

const T = 30_000; // the longest any one thing on the page may take to show
let n = 0;
const log = (...a) => console.log("[lab.mjs]", ...a);

// A fresh profile every run (Playwright passes it as --user-data-dir).
const browser = await launch("lab-chromium-", { width: 1440, height: 1000 });
const page = browser.pages()[0] || await browser.newPage();
const problems = [];
page.on("pageerror", (e) => problems.push(`page error: ${e.message}`));
page.on("console", (m) => { if (m.type() === "error") problems.push(`console error: ${m.text()}`); });

async function shot(name) {
  n += 1;
  const path = join(shots, `${String(n).padStart(2, "0")}-${name}.png`);
  await page.evaluate(() => window.scrollTo(0, 0));
  await page.screenshot({ path, fullPage: true });
  log("screenshot", path);
}

function check(ok, what) {
  if (!ok) throw new Error(`check failed: ${what}`);
  log("ok:", what);
}

/** The article of turn `k`. */
const turn = (k) => page.locator(`article.turn[data-turn="${k}"]`);

async function ask(question) {
  await page.locator("#tab-conversation").waitFor({ state: "visible" });
  await page.fill("#question", question);
  await page.click("#ask");
}

/** `locator` shows whole in the window, below the sticky bar (tabs, and the running bar
 * while a turn waits), not under it: their boxes, compared. */
async function clearOfTheBar(locator, what) {
  const bar = await page.locator("div.sticky").boundingBox();
  const box = await locator.boundingBox();
  const view = page.viewportSize();
  check(box !== null && box.y >= bar.y + bar.height - 0.5 && box.y + box.height <= view.height,
    `${what} shows below the waiting bar (${JSON.stringify(box)}; bar ${JSON.stringify(bar)})`);
}

/** The "approved" and "form" cells of the calls table's row of `tool` in turn `k`. */
async function approvedCells(k, tool) {
  const row = page.locator(`#calls tbody tr[data-turn="${k}"][data-tool="${tool}"]`).first();
  return [await row.locator('td[data-col="approved"]').innerText(), await row.locator('td[data-col="form"]').innerText()];
}

/** Wait until turn `k` shows an answer, and return its text. */
async function answerOf(k) {
  const a = turn(k).locator(".answer");
  await a.waitFor({ state: "visible", timeout: T });
  return a.innerText();
}

try {
  // ---- the page loads, with its token, and connects to the event stream ----
  await page.goto(url);
  await page.waitForFunction(() => document.getElementById("status").textContent.includes("connected"), null, { timeout: T });
  check((await page.title()) === "Gatehouse lab", "the lab page loads");

  // ---- 1. a question the model answers from the allow-listed tools ----
  await ask("Draft a reply to ticket T-30002");
  const first = await answerOf(1);
  check(/refunds and payments/i.test(first), "the T-30002 answer names the refunds-and-payments policy");
  check(await turn(1).locator('li[data-who="model"]', { hasText: "wants support__get_ticket" }).count() === 1,
    "the turn's steps show the model's proposal");
  // The timeline: bars for the model calls and the server rounds.
  const tl = turn(1).locator(".timeline svg");
  await tl.waitFor({ timeout: T });
  check(await tl.locator('rect[data-lane="model"]').count() >= 3, "the timeline draws one bar per model call");
  check(await tl.locator('rect[data-lane="server"]').count() >= 2, "the timeline draws one bar per server round");
  // The tool-call table, and one call's detail.
  const rows = page.locator("#calls tbody tr");
  check(await rows.count() >= 2, "the tool-call table has a row per call");
  await page.locator('#calls tbody tr[data-tool="support__get_ticket"]').first().click();
  await page.locator("#call-detail .for-model", { hasText: "T-30002" }).waitFor({ timeout: T });
  check((await page.locator("#call-detail .args").innerText()).includes('"ticket_id": "T-30002"'),
    "clicking a row shows the full arguments");
  check((await page.locator("#call-detail .for-model").innerText()).includes("support__get_ticket"),
    "…and what went back to the model");
  await shot("answer-timeline-calls");

  check((await approvedCells(1, "support__get_ticket")).join(" ") === "allow-list no",
    "an allow-listed call's row says the allow-list let it run, and no form");

  // ---- 2. approve a call, then answer the tickets form with P1 ----
  // Asked from the bottom of a long page, as a person typing the next question is: the
  // prompts open at the top, and must not land under the sticky bar.
  const ticketQuestion = "who owns jump-prod-02? Open a ticket for it: brute force then a login from 203.0.113.77";
  const wide = page.viewportSize();
  await page.setViewportSize({ width: 1280, height: 600 });
  await page.evaluate(() => window.scrollTo(0, document.body.scrollHeight));
  check(await page.evaluate(() => window.scrollY) > 100, "the page is scrolled down to the question box");
  await ask(ticketQuestion);
  const approval = page.locator('.prompt[data-kind="approval"]');
  await approval.waitFor({ timeout: T });
  await clearOfTheBar(approval.locator("h3"), "the approval's title");
  await clearOfTheBar(approval.locator("p").first(), "which tool the approval is about");
  check((await approval.locator("p").first().innerText()).startsWith("The assistant wants to run"),
    "the model's call is the assistant's");
  check((await approval.innerText()).includes("tickets__open_ticket"), "the approval names the exact tool");
  check((await approval.locator("pre").innerText()).includes("jump-prod-02"), "the approval shows the exact arguments");
  check(await approval.getByRole("button", { name: "Allow this tool for this session" }).count() === 1
    && await approval.getByRole("button", { name: "Allow this tool in this project" }).count() === 1,
    "the approval offers a and A, as the terminal does");
  await shot("approval");
  await approval.getByRole("button", { name: "Run" }).click();
  const form = page.locator('.prompt[data-kind="form"]');
  await form.waitFor({ timeout: T });
  check((await form.innerText()).includes("tickets"), "the form names the asking server");
  await clearOfTheBar(form.locator("h3"), "the form's asking server");
  await clearOfTheBar(form.locator("p").first(), "the form's question");
  await clearOfTheBar(form.locator("select"), "the form's first field");
  await page.setViewportSize(wide);
  // The page checks the form before anything is sent.
  await form.getByRole("button", { name: "Accept" }).click();
  await form.locator('[data-field="priority"] .err', { hasText: "required" }).waitFor({ timeout: T });
  check(true, "an empty required field is caught on the page");
  await form.locator("select").selectOption("P1");
  await shot("form");
  await form.getByRole("button", { name: "Accept" }).click();
  const opened = await answerOf(2);
  check(/INC-\d+ \(P1\)/.test(opened), `the ticket is opened with P1 (${opened.split("\n").pop()})`);
  check(await page.locator(".prompt").count() === 0, "answered questions leave the page");
  check((await approvedCells(2, "tickets__open_ticket")).join(" ") === "you yes",
    "the call the person approved with Run says approved by you, and that the server asked a form");

  // ---- 3. refuse a call ----
  await ask(ticketQuestion);
  await approval.waitFor({ timeout: T });
  await approval.getByRole("button", { name: "Refuse" }).click();
  await answerOf(3);
  check(await turn(3).locator('li[data-who="person"]', { hasText: "said no" }).count() === 1, "refusing shows the person said no");
  check(await page.locator('#calls tbody tr[data-turn="3"][data-outcome="declined"]').count() === 1,
    "the refused call's row says declined");

  // ---- 4. approve, then decline the form ----
  await ask(ticketQuestion);
  await approval.waitFor({ timeout: T });
  await approval.getByRole("button", { name: "Run" }).click();
  await form.waitFor({ timeout: T });
  await form.getByRole("button", { name: "Decline" }).click();
  const declined = await answerOf(4);
  check(await turn(4).locator('li[data-who="person"]', { hasText: "answered decline" }).count() === 1,
    "declining the form shows in the steps");
  check(!/INC-\d+ \(P/.test(declined), "no ticket is opened when the form is declined");
  check(await turn(4).locator('.timeline rect[data-lane="person"]').count() >= 2,
    "the timeline draws the waits for the person");
  await shot("refused-and-declined");

  // ---- 5. the manual panel ----
  await page.getByRole("tab", { name: "Manual" }).click();
  // Each tool's blurb says what the policy does with its calls, in the run's words.
  const policyOf = async (tool) => {
    await page.locator("#manual-tool").selectOption(tool);
    return page.locator("#manual-policy").innerText();
  };
  check(await policyOf("testbed__echo") === "Policy: depends on the arguments (rules[0]): "
    + "not on the allow-list: ask the person; or denied by rules[0]: never a secret",
    "a tool a deny rule refuses for some arguments says so, not only that it is asked");
  check(await policyOf("tickets__open_ticket") === "Policy: not on the allow-list: ask the person",
    "a tool off the allow-list says the person is asked");
  check(await policyOf("support__get_ticket") === "Policy: on the allow-list: run it",
    "an allow-listed tool says it runs without asking");
  check((await page.locator("#manual-args").inputValue()).includes('"ticket_id"'),
    "the arguments are prefilled from the schema's required properties");
  await page.fill("#manual-args", '{"ticket_id": "T-30002"}');
  await page.click("#manual-run");
  await page.locator("#manual-result", { hasText: "Charged twice" }).waitFor({ timeout: T });
  check(true, "a manual run shows its result");
  // The person proposed it: no model appears in its steps or its result.
  check(await page.locator('#manual-steps li[data-who="person"]', { hasText: "calls support__get_ticket" }).count() === 1
    && await page.locator('#manual-steps li[data-who="model"]').count() === 0,
    "the manual run's steps say the person called it, not the model");
  check((await page.locator("#manual-result").innerText()).startsWith("The result, as a model would read it"),
    "the manual result says what it is, not what went back to a model");
  check(await page.locator('#calls tbody tr[data-turn="5"][data-outcome="ok"]').count() === 1,
    "the manual call has its row in the table");
  await shot("manual");

  // ---- 6. stop a slow call ----
  await page.locator("#manual-tool").selectOption("testbed__sleep");
  await page.fill("#manual-args", '{"seconds": 30}');
  await page.click("#manual-run");
  await page.locator("#running-what", { hasText: "sleep" }).waitFor({ timeout: T });
  // The server reports progress on the sleep; the page draws it.
  await page.locator("#progress").waitFor({ state: "visible", timeout: T });
  check((await page.locator("#progress-text").innerText()).includes("of 30"), "progress shows while the call runs");
  await shot("slow-call-running");
  const stopAt = Date.now();
  await page.click("#stop");
  await page.locator('#manual-steps li[data-who="person"]', { hasText: "stopped the call" }).waitFor({ timeout: T });
  check(Date.now() - stopAt < 10_000, "Stop ends the call at once, not after 30 s");
  check(await page.locator('#calls tbody tr[data-turn="6"][data-outcome="stopped"]').count() === 1,
    "the stopped call's row says stopped");
  await page.locator("#running").waitFor({ state: "hidden", timeout: T });

  // ---- 6b. a call that goes on as a task; the next turn tells the person it ended ----
  await page.locator("#manual-tool").selectOption("testbed__task_job");
  await page.fill("#manual-args", '{"seconds": 1}');
  await page.click("#manual-run");
  await page.locator('#calls tbody tr[data-turn="7"][data-outcome="background"]').waitFor({ timeout: T });
  check(true, "a call that outlives the turn's task wait goes on in the background");
  await page.locator("#running").waitFor({ state: "hidden", timeout: T });
  // The job sleeps 1 s; give it room to end on the server.
  await page.waitForTimeout(2500);
  await page.getByRole("tab", { name: "Conversation" }).click();
  await ask("Draft a reply to ticket T-30002");
  await answerOf(8);
  const notice = turn(8).locator(".notice");
  check(await notice.count() === 1, "the next turn shows one notice for the task that ended");
  const said = await notice.innerText();
  check(/^Task \S+ \(testbed__task_job on testbed\), which went on in the background, has ended: completed\./.test(said),
    `the notice names the task, its tool and how it ended (${said})`);
  check(await page.locator('#calls tbody tr[data-turn="8"][data-outcome="ok"]').count() >= 1,
    "the task's end has its row in the table");
  await shot("task-ended-notice");

  // ---- 6c. a manual call the policy asks about: the person proposed it ----
  await page.getByRole("tab", { name: "Manual" }).click();
  await page.locator("#manual-tool").selectOption("tickets__open_ticket");
  await page.fill("#manual-args", '{"host": "jump-prod-02", "summary": "by hand"}');
  await page.click("#manual-run");
  await approval.waitFor({ timeout: T });
  const byHand = await approval.innerText();
  check(byHand.includes("You asked to run tickets__open_ticket") && !/assistant/i.test(byHand),
    "a manual call's approval says you asked for it, not the assistant");
  check(await page.locator('#manual-steps li[data-who="host"]', { hasText: "You asked to run tickets__open_ticket" }).count() === 1
    && !/assistant|MODEL wants/i.test(await page.locator("#manual-steps").innerText()),
    "the manual call's steps name the person, never a model");
  await approval.getByRole("button", { name: "Refuse" }).click();
  await page.locator('#calls tbody tr[data-turn="9"][data-outcome="declined"]').waitFor({ timeout: T });
  check((await approvedCells(9, "tickets__open_ticket")).join(" ") === "— no", "a refused call was approved by nobody");
  await page.locator("#running").waitFor({ state: "hidden", timeout: T });

  // ---- 7. the explorer: a lab turn, then a file recorded with --record ----
  await page.getByRole("tab", { name: "Explorer" }).click();
  await page.locator("#ex-source").selectOption("turn:1");
  await page.locator("#ex-list tbody tr").first().waitFor({ timeout: T });
  const total = await page.locator("#ex-list tbody tr").count();
  check(total >= 4, `turn 1's recording lists its messages (${total})`);
  check(Number(await page.locator('[data-total="requests"] b').innerText()) >= 2, "the totals count requests");
  check(Number(await page.locator('[data-total="bytes to servers"] b').innerText()) > 0, "the totals count bytes");
  await page.click("#ex-next");
  await page.click("#ex-next");
  check((await page.locator("#ex-pos").innerText()) === `3 / ${total}`, "Next steps forward");
  await page.click("#ex-prev");
  check((await page.locator("#ex-pos").innerText()) === `2 / ${total}`, "Prev steps back");
  check((await page.locator("#ex-detail pre.message").innerText()).includes("jsonrpc") ||
    (await page.locator("#ex-detail dd").nth(2).innerText()) === "stderr", "the whole message is shown");
  await page.locator("#ex-list tbody tr").first().click();
  check((await page.locator("#ex-pos").innerText()) === `1 / ${total}`, "clicking the list jumps to a message");
  await shot("explorer-turn");
  if (recording) {
    await page.setInputFiles("#ex-file", recording);
    await page.locator("#ex-source option", { hasText: "file:" }).waitFor({ state: "attached", timeout: T });
    const fromFile = await page.locator("#ex-list tbody tr").count();
    check(fromFile >= 4, `a --record file opens in the explorer (${fromFile} messages)`);
    const rounds = page.locator("#ex-list tbody tr", { hasText: "call open_ticket" });
    check(await rounds.count() === 2, "both rounds of the recorded open_ticket call are listed");
    await rounds.first().click();
    check((await page.locator("#ex-detail pre.message").innerText()).includes('"name": "open_ticket"'),
      "the request is shown whole");
    // Step on to the server's answer to that round: it asks for input.
    for (let i = 0; i < 4; i++) {
      if ((await page.locator("#ex-detail h3").innerText()).includes("input required")) break;
      await page.click("#ex-next");
    }
    check((await page.locator("#ex-detail pre.message").innerText()).includes("inputRequests"),
      "stepping on shows the server's input_required answer");
    await shot("explorer-file");
  }
  check(problems.length === 0, `no errors on the page${problems.length ? ": " + problems.join("; ") : ""}`);
  log("all checks passed");
  await browser.close();
  process.exit(0);
} catch (err) {
  console.error("[lab.mjs] FAILED:", err.message);
  if (problems.length) console.error("[lab.mjs] page problems:", problems.join("\n"));
  try { await shot("failure"); } catch { /* the page may be gone */ }
  await browser.close();
  process.exit(1);
}
