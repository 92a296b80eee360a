// Drives the gateway's approval page in Debian's Chromium, as a person would, and checks
// what it shows. Run by crates/cli/tests/end_to_end/gateway/page.rs:
//
//   node tests/browser/gateway_page.mjs approve|deny <page URL> <token> <another user's token> [screenshot dir]
//   node tests/browser/gateway_page.mjs oauth-approve|oauth-refusals <page URL> <issuer> <another account> [screenshot dir]
//
// approve: another user signed in sees nothing of the call (404); with no session the page
// is the sign-in form; an unknown token is refused; the person signs in with their token
// (a POSTed form; the cookie is HttpOnly, SameSite=Strict and not the token), sees the
// exact call, a POST without the CSRF token is refused, Approve records the decision, and
// the same decision sent twice is refused.
// deny: the person signs in, sees the hostile arguments as text (no script runs, no
// element is injected), and denies.
//
// oauth-approve (the gateway under --oauth-issuer, oidc-provider's login switched through
// its /__test/login hook): another account signing in at the issuer sees 404; with no
// session the page sends the browser to the issuer (a code with S256, the gateway's
// resource, a state and a nonce), which sends it back signed in as the person, who sees
// the call and approves it; the sign-in's callback, replayed, signs nobody in.
// oauth-refusals (both ways in offered): the page offers the issuer and the token form; a
// wrong iss, a state used already, one made up, one of another browser, and the issuer's
// own refusal each end on a page that says so, with no session; then the person signs in
// at the issuer and approves.
//
// Exits 0 when every check passed ("all checks passed"); prints the failing check and
// exits 1 otherwise.
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { launch } from "./chromium.mjs";

// For the OAuth scenarios `token` is the issuer, and `otherToken` another account there.
const [scenario, url, token, otherToken, shots = "target/gateway-page-screenshots"] = process.argv.slice(2);
const scenarios = ["approve", "deny", "oauth-approve", "oauth-refusals"];
if (!scenarios.includes(scenario) || !url || !token || !otherToken) {
  console.error("usage: node gateway_page.mjs approve|deny <page URL> <token> <other token> [screenshot dir]\n"
    + "       node gateway_page.mjs oauth-approve|oauth-refusals <page URL> <issuer> <other account> [screenshot dir]");
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

/** Click `button` (#approve or #deny): the page says the decision, `word`, was recorded. */
async function decide(page, button, word) {
  await Promise.all([page.waitForLoadState("load"), page.click(button)]);
  const outcome = await page.locator("#outcome").textContent({ timeout: T });
  check(outcome === word, `${word}: the decision is recorded (${outcome})`);
}

/** A person's browser closed, once it is known to have seen no script error or dialog. */
async function leave({ context, seen }) {
  check(seen.length === 0, `no script error or dialog: ${seen.join("; ")}`);
  await context.close();
}

/** `who`, signed in, is told there is no such call, and sees none of it. */
async function seesNothing(page, who) {
  const shown = await page.locator("#outcome").textContent({ timeout: T });
  const body = await page.content();
  check(shown.includes("No such call"), `${who} is told there is no such call (${shown})`);
  check(!body.includes("cmdb") && !body.includes("jump-prod"), `${who} sees none of the call`);
}

async function approveScenario() {
  // Another user of the same organization, signed in with their own token, sees nothing.
  const other = await person();
  await signIn(other.page, otherToken);
  await seesNothing(other.page, "another user");
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

  await decide(page, "#approve", "Approved");
  await shot(page, "approved");

  // Used twice: refused, on the page and by a replayed POST.
  const again = await page.request.post(url, { form: { decision: "deny", csrf } });
  check(again.status() === 409, `the same decision sent again is refused (${again.status()})`);
  const reopened = await page.goto(url);
  check(reopened.status() === 409, `the page, opened again, says it was decided (${reopened.status()})`);
  await leave({ context, seen });
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
  await decide(page, "#deny", "Denied");
  await shot(page, "denied");
  await leave({ context, seen });
}

const issuer = token;
const base = url.slice(0, url.indexOf("/approve/"));
const callback = `${base}/approve/callback`;

/** Who the issuer's automatic login signs in from now on (`account=…`), or `deny=1`. */
async function asLogin(query) {
  const answer = await fetch(`${issuer}/__test/login?${query}`, { method: "POST" });
  check(answer.ok, `the issuer's login switched (${query})`);
}

/** Sign in at the issuer from the page as `account`: the authorization requests the
 *  browser made, and the callbacks it came back to. */
async function oauthSignIn(page, account) {
  await asLogin(`account=${account}`);
  const asked = [];
  const back = [];
  const note = (r) => {
    if (r.url().startsWith(`${issuer}/auth?`)) asked.push(new URL(r.url()));
    if (r.url().startsWith(`${callback}?`)) back.push(r.url());
  };
  page.on("request", note);
  await page.goto(url);
  await page.waitForURL(url, { timeout: T });
  await page.locator("#outcome, #tool").first().waitFor({ state: "visible", timeout: T });
  page.off("request", note);
  check(asked.length === 1 && back.length === 1, `one trip to the issuer and back (${asked.length}, ${back.length})`);
  return { asked: asked[0], back: back[0] };
}

/** The state of a sign-in begun with the page's request context (the browser's cookies). */
async function begunState(page) {
  const begun = await page.request.get(`${url}/oauth`, { maxRedirects: 0 });
  check(begun.status() === 303, `a sign-in begins with a redirect (${begun.status()})`);
  const location = new URL(begun.headers()["location"]);
  check(location.href.startsWith(`${issuer}/auth?`), "to the issuer's authorization endpoint");
  return location.searchParams.get("state");
}

/** Open `query` at the callback: the page says nobody was signed in, and why. */
async function refusedBack(page, query, status, says, what) {
  const answer = await page.goto(`${callback}?${query}`);
  const detail = await page.locator("#detail").textContent({ timeout: T });
  check(answer.status() === status && detail.includes(says), `${what}: ${answer.status()} ${detail}`);
  check((await page.locator("#outcome").textContent()) === "Not signed in", `${what}: not signed in`);
}

async function oauthApproveScenario() {
  const other = await person();
  await oauthSignIn(other.page, otherToken);
  await seesNothing(other.page, "another account");
  await shot(other.page, "oauth-another-account");
  await other.context.close();

  const { context, page, seen } = await person();
  const { asked, back } = await oauthSignIn(page, "usr-sam");
  const q = asked.searchParams;
  check(q.get("response_type") === "code" && q.get("code_challenge_method") === "S256", "a code with PKCE S256 is asked for");
  check(q.get("resource") === `${base}/mcp`, `for the gateway's resource (${q.get("resource")})`);
  check(q.get("redirect_uri") === callback, `back to the page (${q.get("redirect_uri")})`);
  check(q.get("state")?.length >= 32 && q.get("nonce")?.length >= 32, "with a state and a nonce");
  check(q.get("scope").split(" ").includes("openid"), `openid asked of an OpenID provider (${q.get("scope")})`);
  check(new URL(back).searchParams.get("iss") === issuer, "the issuer names itself on the way back");
  await page.locator("#tool").waitFor({ state: "visible", timeout: T });
  await shot(page, "oauth-the-call");
  check((await page.locator("#caller").textContent()) === "usr-sam@larkfield", "the person signed in at the issuer is named");
  check((await page.locator("#tool").textContent()) === "cmdb__get_asset", "the tool is shown");
  const cookies = await context.cookies();
  const session = cookies.find((c) => c.name === "gatehouse_approval");
  const binding = cookies.find((c) => c.name === "gatehouse_sign_in");
  check(session && session.httpOnly && session.sameSite === "Strict", "the session cookie is HttpOnly and SameSite=Strict");
  check(binding && binding.httpOnly && binding.sameSite === "Lax", "the sign-in cookie is HttpOnly and SameSite=Lax");
  check(!cookies.some((c) => c.value.includes("eyJ")), "no token in a cookie");

  // The callback, replayed (its code and state as they came): nobody is signed in again.
  await refusedBack(page, new URL(back).search.slice(1), 400, "used once", "the callback replayed");
  await page.goto(url);
  await page.locator("#approve").waitFor({ state: "visible", timeout: T });
  await decide(page, "#approve", "Approved");
  await shot(page, "oauth-approved");
  await leave({ context, seen });
}

async function oauthRefusalsScenario() {
  const { context, page, seen } = await person();
  const first = await page.goto(url);
  check(first.status() === 200, `with no session and both ways in, the sign-in page (${first.status()})`);
  check(await page.locator("#oauth").count() === 1 && await page.locator("#token").count() === 1,
    "the page offers the issuer and the token form");
  check((await page.locator("#oauth").textContent()).includes(issuer), "the issuer is named");
  await shot(page, "oauth-both-ways");

  const iss = `iss=${encodeURIComponent(issuer)}`;
  const state = await begunState(page);
  await refusedBack(page, `code=x&state=${state}&iss=${encodeURIComponent("http://evil.example")}`, 400,
    "another authorization server", "another issuer's iss");
  await refusedBack(page, `code=x&state=${state}&${iss}`, 400, "used once", "a state used already");
  await refusedBack(page, `code=x&state=${"0".repeat(64)}&${iss}`, 400, "not one the gateway began", "a state made up");
  const elsewhere = await begunState(page);
  const other = await person();
  await begunState(other.page);
  await refusedBack(other.page, `code=x&state=${elsewhere}&${iss}`, 400, "began in this browser", "another browser's state");
  await other.context.close();
  const none = await person();
  await refusedBack(none.page, `code=x&state=${await begunState(page)}&${iss}`, 400, "did not begin", "no sign-in cookie");
  await none.context.close();

  await asLogin("deny=1");
  await page.goto(url);
  const back = (u) => u.href.startsWith(`${callback}?`);
  await Promise.all([page.waitForURL(back, { timeout: T }), page.click("#oauth")]);
  const detail = await page.locator("#detail").textContent({ timeout: T });
  check(detail.includes("refused the sign-in: access_denied"), `the issuer's refusal is said (${detail})`);
  await shot(page, "oauth-refused");
  check(!(await context.cookies()).some((c) => c.name === "gatehouse_approval"), "no session after any of them");
  const again = await page.goto(url);
  check(again.status() === 200 && await page.locator("#oauth").count() === 1, "the page still asks to sign in");

  await asLogin("account=usr-sam");
  await Promise.all([page.waitForURL(url, { timeout: T }), page.click("#oauth")]);
  await page.locator("#approve").waitFor({ state: "visible", timeout: T });
  await decide(page, "#approve", "Approved");
  await leave({ context, seen });
}

try {
  if (scenario === "approve") await approveScenario();
  else if (scenario === "deny") await denyScenario();
  else if (scenario === "oauth-approve") await oauthApproveScenario();
  else await oauthRefusalsScenario();
  console.log("all checks passed");
  process.exit(0);
} catch (e) {
  console.error(String(e && e.stack || e));
  process.exit(1);
}
