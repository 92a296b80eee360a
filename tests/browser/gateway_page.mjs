// Drives the gateway's approval page in Debian's Chromium, as a person would, and checks
// what it shows. Run by crates/cli/tests/end_to_end/gateway/page.rs:
//
//   node tests/browser/gateway_page.mjs approve|deny <page URL> <token> <another user's token> [screenshot dir]
//
// approve: another user signed in sees nothing of the call (404); with no session the page
// is the sign-in form; an unknown token is refused; the person signs in with their token
// (a POSTed form; the cookie is HttpOnly, SameSite=Strict and not the token), sees the
// exact call, a POST without the CSRF token is refused, Approve records the decision, and
// the same decision sent twice is refused.
// deny: the person signs in, sees the hostile arguments as text (no script runs, no
// element is injected), and denies.
//
// Exits 0 when every check passed ("all checks passed"); prints the failing check and
// exits 1 otherwise.
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { launch } from "./chromium.mjs";

const [scenario, url, token, otherToken, shots = "target/gateway-page-screenshots"] = process.argv.slice(2);
if (!["approve", "deny"].includes(scenario) || !url || !token || !otherToken) {
  console.error("usage: node gateway_page.mjs approve|deny <page URL> <token> <other token> [screenshot dir]");
  process.exit(2);
}
mkdirSync(shots, { recursive: true });
const T = 30_000;
let n = 0;
const log = (...a) => console.log("[gateway_page.mjs]", ...a);

function check(ok, what) {
  if (!ok) throw new Error(`check failed: ${what}`);
  log("ok:", what);
}

/** A person's browser: its page, and whatever script errors or dialogs it saw. */
async function person() {
  const context = await launch("gw-page-chromium-", { width: 1200, height: 900 });
  const page = context.pages()[0] || await context.newPage();
  const seen = [];
  page.on("pageerror", (e) => seen.push(`page error: ${e.message}`));
  page.on("dialog", (d) => { seen.push(`dialog: ${d.message()}`); d.dismiss(); });
  return { context, page, seen };
}

async function shot(page, name) {
  n += 1;
  const path = join(shots, `${scenario}-${String(n).padStart(2, "0")}-${name}.png`);
  await page.screenshot({ path, fullPage: true });
  log("screenshot", path);
}

async function signIn(page, withToken) {
  const first = await page.goto(url);
  check(first.status() === 200, `with no session the page answers 200 (${first.status()})`);
  await page.locator("#token").waitFor({ state: "visible", timeout: T });
  check(await page.locator("#tool").count() === 0, "with no session the call is not shown");
  await page.fill("#token", withToken);
  await Promise.all([page.waitForLoadState("load"), page.click("#sign-in")]);
  check(!page.url().includes(withToken), "the token never appears in a URL");
}

async function approveScenario() {
  // Another user of the same organization, signed in with their own token, sees nothing.
  const other = await person();
  await signIn(other.page, otherToken);
  const shown = await other.page.locator("#outcome").textContent({ timeout: T });
  const body = await other.page.content();
  check(shown.includes("No such call"), `another user is told there is no such call (${shown})`);
  check(!body.includes("cmdb") && !body.includes("jump-prod"), "another user sees none of the call");
  const otherGet = await other.page.request.get(url);
  check(otherGet.status() === 404, `another user's session gets 404 (${otherGet.status()})`);
  await shot(other.page, "another-user");
  await other.context.close();

  const { context, page, seen } = await person();
  // An unknown token is refused, and nothing is shown.
  await page.goto(url);
  await page.fill("#token", "not-a-token-of-this-gateway");
  await Promise.all([page.waitForLoadState("load"), page.click("#sign-in")]);
  check((await page.content()).includes("not one this gateway knows"), "an unknown token is refused");
  check(await page.locator("#tool").count() === 0, "an unknown token sees no call");

  await signIn(page, token);
  await page.locator("#tool").waitFor({ state: "visible", timeout: T });
  await shot(page, "the-call");
  check((await page.locator("#tool").textContent()) === "cmdb__get_asset", "the tool is shown");
  check((await page.locator("#server").textContent()) === "cmdb", "the server is shown");
  check((await page.locator("#why").textContent()).includes("asset records are private"), "the rule's reason is shown");
  check((await page.locator("#arguments").textContent()).includes("\"hostname\": \"jump-prod-02\""), "the exact arguments are shown");
  check((await page.locator("#caller").textContent()) === "usr-sam@larkfield", "the person signed in is named");

  const cookies = await context.cookies();
  const session = cookies.find((c) => c.name === "gatehouse_approval");
  check(session, "a session cookie was set");
  check(session.httpOnly, "the session cookie is HttpOnly");
  check(session.sameSite === "Strict", `the session cookie is SameSite=Strict (${session.sameSite})`);
  check(session.value !== token && !session.value.includes(token), "the cookie is not the token");

  // A decision without the CSRF token is refused, and decides nothing.
  const noCsrf = await page.request.post(url, { form: { decision: "approve" } });
  check(noCsrf.status() === 403, `a POST without the CSRF token is refused (${noCsrf.status()})`);
  const wrongCsrf = await page.request.post(url, { form: { decision: "approve", csrf: "0".repeat(32) } });
  check(wrongCsrf.status() === 403, `a POST with a wrong CSRF token is refused (${wrongCsrf.status()})`);
  await page.reload();
  await page.locator("#approve").waitFor({ state: "visible", timeout: T });
  const csrf = await page.locator("input[name=csrf]").inputValue();

  await Promise.all([page.waitForLoadState("load"), page.click("#approve")]);
  const outcome = await page.locator("#outcome").textContent({ timeout: T });
  check(outcome === "Approved", `Approve records the decision (${outcome})`);
  await shot(page, "approved");

  // Used twice: refused, on the page and by a replayed POST.
  const again = await page.request.post(url, { form: { decision: "deny", csrf } });
  check(again.status() === 409, `the same decision sent again is refused (${again.status()})`);
  const reopened = await page.goto(url);
  check(reopened.status() === 409, `the page, opened again, says it was decided (${reopened.status()})`);
  check(seen.length === 0, `no script error or dialog: ${seen.join("; ")}`);
  await context.close();
}

async function denyScenario() {
  const { context, page, seen } = await person();
  await signIn(page, token);
  await page.locator("#tool").waitFor({ state: "visible", timeout: T });
  await shot(page, "hostile-arguments");
  const args = await page.locator("#arguments").textContent();
  check(args.includes("<script>") && args.includes("<img"), "the hostile arguments are shown as text");
  check(await page.locator("#arguments img, #arguments script, img, iframe").count() === 0, "no element was injected");
  check(await page.evaluate(() => window.__pwned === undefined), "no injected script ran");
  await Promise.all([page.waitForLoadState("load"), page.click("#deny")]);
  const outcome = await page.locator("#outcome").textContent({ timeout: T });
  check(outcome === "Denied", `Deny records the decision (${outcome})`);
  await shot(page, "denied");
  check(seen.length === 0, `no script error or dialog: ${seen.join("; ")}`);
  await context.close();
}

try {
  if (scenario === "approve") await approveScenario();
  else await denyScenario();
  console.log("all checks passed");
  process.exit(0);
} catch (e) {
  console.error(String(e && e.stack || e));
  process.exit(1);
}
