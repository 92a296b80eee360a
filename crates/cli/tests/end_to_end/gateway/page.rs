//! The approval page (`--approval-page URL`), for a client that takes only URL questions:
//! the Python SDK client declaring `elicitation: {url: {}}` and nothing else
//! (`tests/peers/py_url_client.py`) is asked with a URL naming one confirmation; a person
//! in real headless Chromium (`tests/browser/gateway_page.mjs`) opens it, signs in with
//! their bearer token, sees the exact call and approves or denies it; the call runs once,
//! or not at all. The client's answer to the URL question approves nothing by itself; with
//! no page set up the client is told why it is refused; and a decision taken on one
//! replica's page lets the call's next round run on the other, on SQLite and PostgreSQL.

use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::*;
use crate::common::{
    browser, http_server,
    ports::{HeldFirst, free_port, on_the_first_free},
    repo_root,
    serve::{OMAR_TOKEN, SAM_TOKEN},
};

/// A gateway with the approval page at its own address.
struct PageGw {
    server: Process,
    base: String,
    dir: tempfile::TempDir,
}

impl PageGw {
    /// Started on a free port, with `--approval-page http://127.0.0.1:PORT` and `extra`.
    fn start(extra: &[&str]) -> PageGw {
        let dir = tempfile::tempdir().unwrap();
        let config = gateway_config(dir.path());
        let state = dir.path().join("state.db");
        let (server, base) = with_page(dir.path(), &config, state.to_str().unwrap(), extra);
        PageGw { server, base, dir }
    }

    fn ledger(&self) -> Vec<Value> {
        ledger_lines(&self.dir.path().join("ledger.jsonl"))
    }

    /// The URL-only client calling `arguments` of the asked tool: running.
    fn client(&self, mode: &str, arguments: &Value, extra: &[&str]) -> UrlClient {
        UrlClient::start(&self.server.url, self.dir.path(), mode, arguments, extra)
    }
}

/// A gateway on `config` and `state`, its page at its own (free) port: it and the base.
fn with_page(dir: &Path, config: &str, state: &str, extra: &[&str]) -> (Process, String) {
    with_page_on(&mut free_port, (dir, config, state), extra)
}

/// [`with_page`] on the first port of `ports` still free when the gateway binds it.
fn with_page_on(
    ports: &mut dyn FnMut() -> u16,
    (dir, config, state): (&Path, &str, &str),
    extra: &[&str],
) -> (Process, String) {
    on_the_first_free("the gateway with its page", ports, |port| {
        let addr = format!("127.0.0.1:{port}");
        let base = format!("http://{addr}");
        let mut flags = vec!["--approval-page", base.as_str()];
        flags.extend_from_slice(extra);
        let server = try_start_gateway_on(dir, config, state, &addr, &flags)?;
        Ok((server, base))
    })
}

/// `py_url_client.py` running against a gateway, writing each URL it is asked to open
/// to a file.
pub(super) struct UrlClient {
    process: Process,
    urls: PathBuf,
}

impl UrlClient {
    /// With Sam's bearer token from the tokens file.
    fn start(url: &str, dir: &Path, mode: &str, arguments: &Value, extra: &[&str]) -> UrlClient {
        let sam = ["--header".to_owned(), bearer()];
        let extra: Vec<&str> = sam
            .iter()
            .map(String::as_str)
            .chain(extra.iter().copied())
            .collect();
        UrlClient::signed_in_by(url, dir, mode, arguments, &extra)
    }

    /// Signing in as `extra` says (`--header`, `--oauth-browser`), and with its other flags.
    pub(super) fn signed_in_by(
        url: &str,
        dir: &Path,
        mode: &str,
        arguments: &Value,
        extra: &[&str],
    ) -> UrlClient {
        static RUNS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let n = RUNS.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        let urls = dir.join(format!("urls-{n}.txt"));
        let mut cmd = std::process::Command::new(python());
        cmd.arg(script("py_url_client.py"))
            .args(["--url", url, "--mode", mode])
            .args(["--call", ASKED, "--args", &arguments.to_string()])
            .args(["--url-file", urls.to_str().unwrap()])
            .args(extra);
        // Its stderr (each HTTP exchange, the sign-in's steps) kept, to say where it stuck.
        let process = Spawn::new(cmd, "py_url_client.py").watched(Stream::Stderr);
        UrlClient { process, urls }
    }

    /// The first URL the client was asked to open (waited for).
    pub(super) fn first_url(&self) -> String {
        let started = Instant::now();
        loop {
            let text = std::fs::read_to_string(&self.urls).unwrap_or_default();
            if let Some(url) = text.lines().next() {
                return url.to_owned();
            }
            assert!(
                started.elapsed() < Duration::from_secs(60),
                "the client was never asked to open a URL: {:?}",
                self.process.lines()
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// What it printed, once it is done.
    pub(super) fn output(self) -> Value {
        let ran = self.process.wait(PEER_LIMIT);
        serde_json::from_str(&ran.stdout).unwrap_or_else(|e| {
            panic!(
                "py_url_client.py printed no JSON ({e}):\n{}\n{}",
                ran.stdout, ran.stderr
            )
        })
    }
}

/// A page URL names one confirmation by an id, and nothing of the call.
pub(super) fn assert_page_url(url: &str, base: &str) -> String {
    let id = url
        .strip_prefix(&format!("{base}/approve/"))
        .unwrap_or_else(|| panic!("not a page URL of {base}: {url}"));
    assert_eq!(id.len(), 32, "{url}");
    assert!(id.bytes().all(|b| b.is_ascii_hexdigit()), "{url}");
    id.to_owned()
}

/// Every question the client got was the URL question, for `url`.
pub(super) fn assert_url_questions(out: &Value, url: &str) -> usize {
    let asked = out["elicitations"]
        .as_array()
        .expect("the client was asked");
    for q in asked {
        assert_eq!(q["mode"], "url", "{q}");
        assert_eq!(q["url"], url, "the same URL every round: {q}");
        assert!(q.get("requestedSchema").is_none(), "{q}");
        let message = q["message"].as_str().unwrap();
        assert!(message.contains(ASKED) && message.contains("cmdb"), "{q}");
    }
    asked.len()
}

/// The chromium script's `scenario` on `url`, as Sam (Omar the other user).
fn in_chromium(scenario: &str, url: &str) {
    in_chromium_with(scenario, &[url, SAM_TOKEN, OMAR_TOKEN]);
}

/// The chromium script's `scenario` with `args` (the page's URL first).
pub(super) fn in_chromium_with(scenario: &str, args: &[&str]) {
    let root = repo_root();
    let shots = browser::screenshots(&root, "gateway-page-screenshots");
    let shots = shots.to_string_lossy().into_owned();
    let mut all = vec![scenario];
    all.extend_from_slice(args);
    all.push(&shots);
    let ran = browser::run_script(&root, "gateway_page.mjs", &all);
    assert_eq!(
        ran.status, 0,
        "the browser script failed; screenshots in {shots}"
    );
    assert!(ran.stdout.contains("all checks passed"), "{}", ran.stdout);
}

pub fn a_url_only_client_is_sent_to_the_page_and_the_person_approves_in_chromium(mode: &str) {
    let gw = PageGw::start(&[]);
    let client = gw.client(mode, &asked_args(), &[]);
    let url = client.first_url();
    assert_page_url(&url, &gw.base);
    assert!(!url.contains("jump") && !url.contains(SAM_TOKEN), "{url}");
    in_chromium("approve", &url);
    let out = client.output();
    let protocol = if mode == "auto" {
        "2026-07-28"
    } else {
        "2025-11-25"
    };
    assert_eq!(out["protocolVersion"], protocol, "{out}");
    assert_eq!(
        out["capabilities"]["elicitation"],
        json!({"url": {}}),
        "{out}"
    );
    assert!(assert_url_questions(&out, &url) >= 1);
    let result = &out["result"];
    assert_eq!(result["isError"], false, "{out}");
    assert_eq!(result["structuredContent"]["hostname"], "jump-prod-02");
    // One yes, by the person signed in on the page, and the call ran once.
    let lines = gw.ledger();
    let asked: Vec<&Value> = lines.iter().filter(|l| l["tool"] == ASKED).collect();
    assert_eq!(asked.len(), 1, "{lines:#?}");
    assert_eq!(asked[0]["answer"], "yes", "{lines:#?}");
    assert_eq!(asked[0]["by"], "person", "{lines:#?}");
    assert_eq!(asked[0]["caller"], "usr-sam@larkfield");
    assert_eq!(asked[0]["confirmation"].is_string(), mode == "auto");
    assert!(
        gw.server
            .lines()
            .iter()
            .any(|l| l.contains("approval page: ")),
        "{:?}",
        gw.server.lines()
    );
}

pub fn the_person_denies_on_the_page_and_hostile_arguments_stay_text(mode: &str) {
    let gw = PageGw::start(&[]);
    let hostile = json!({"hostname":
        "jump<script>window.__pwned=1</script><img src=x onerror=\"window.__pwned=1\">\u{1b}[2J"});
    let client = gw.client(mode, &hostile, &[]);
    let url = client.first_url();
    in_chromium("deny", &url);
    let out = client.output();
    let result = &out["result"];
    assert_eq!(result["isError"], true, "{out}");
    assert!(result.to_string().contains("declined"), "{out}");
    let lines = gw.ledger();
    let line = last_line_of(&lines, ASKED);
    assert_eq!(line["answer"], "no", "{line}");
    assert_eq!(line["by"], "person", "decided on the page: {line}");
}

pub fn an_answer_to_the_url_question_approves_nothing_by_itself(mode: &str) {
    // An accept carrying the form's answer: the page decided nothing, so the call is
    // asked again, with the same URL, a bounded number of times, then refused.
    let gw = PageGw::start(&["--approval-page-wait", "1"]);
    let forged = ["--content", r#"{"approve": true, "remember": true}"#];
    let out = gw.client(mode, &asked_args(), &forged).output();
    let url = out["elicitations"][0]["url"].as_str().unwrap().to_owned();
    assert_eq!(
        assert_url_questions(&out, &url),
        8,
        "MAX_PAGE_ROUNDS rounds: {out}"
    );
    assert_eq!(out["result"]["isError"], true, "{out}");
    let lines = gw.ledger();
    let line = last_line_of(&lines, ASKED);
    assert_eq!(
        (&line["answer"], &line["by"]),
        (&json!("no"), &json!("nobody")),
        "{line}"
    );

    // Declined (or cancelled): refused at once, the person's no.
    for action in ["decline", "cancel"] {
        let out = gw
            .client(mode, &asked_args(), &["--action", action])
            .output();
        assert_eq!(
            out["elicitations"].as_array().map(Vec::len),
            Some(1),
            "{out}"
        );
        assert_eq!(out["result"]["isError"], true, "{out}");
        let lines = gw.ledger();
        let line = last_line_of(&lines, ASKED);
        assert_eq!(line["answer"], "no", "{line}");
        assert_eq!(
            line["by"], "client",
            "the client declined the URL question: {line}"
        );
    }
    assert!(
        !gw.ledger().iter().any(|l| l["answer"] == "yes"),
        "{:#?}",
        gw.ledger()
    );
}

pub fn without_a_page_a_url_only_client_is_refused_and_told_why(mode: &str) {
    let gw = Gw::new(Transport::Http);
    let out = UrlClient::start(&gw.url().unwrap(), gw.path(), mode, &asked_args(), &[]).output();
    assert_eq!(out["elicitations"], json!([]), "never asked: {out}");
    let text = out["result"].to_string();
    assert_eq!(out["result"]["isError"], true, "{out}");
    assert!(
        text.contains("no approval page (--approval-page)"),
        "{text}"
    );
    let line = last_line_of(&gw.ledger(), ASKED).clone();
    assert_eq!(line["by"], "nobody", "{line}");

    // A base URL that is not one, or would carry more than the id, stops the gateway
    // before it starts; so does a page without --tokens (nobody could sign in).
    let tokens = tokens_file(gw.path());
    let tokens = tokens.to_str().unwrap();
    let gateway = |extra: &[&str]| {
        let mut args = vec!["gateway", "--config", &gw.config, "--http", "127.0.0.1:0"];
        args.extend_from_slice(extra);
        crate::common::run(&args, &[])
    };
    for (bad, says) in [
        ("ftp://gw.example", "http:// or https://"),
        ("https://gw.example/?next=1", "query"),
        ("https://sam:pw@gw.example", "user"),
    ] {
        let ran = gateway(&["--tokens", tokens, "--approval-page", bad]);
        assert_ne!(ran.status, 0, "{bad}");
        let said = &ran.stderr;
        assert!(
            said.contains("--approval-page") && said.contains(says),
            "{said}"
        );
        assert!(!said.contains("pw@"), "{said}");
    }
    let ran = gateway(&["--approval-page", "http://127.0.0.1:1"]);
    assert_ne!(ran.status, 0);
    assert!(ran.stderr.contains("--tokens"), "{}", ran.stderr);
}

/// A round of the asked call from a client that declares URL questions only.
fn url_round(id: i64, extra: Value) -> Value {
    let mut params = json!({"name": ASKED, "arguments": asked_args()});
    params
        .as_object_mut()
        .unwrap()
        .extend(extra.as_object().unwrap().clone());
    let mut body = http_server::request(id, "tools/call", params);
    body["params"]["_meta"]["io.modelcontextprotocol/clientCapabilities"] =
        json!({"elicitation": {"url": {}}});
    body
}

fn accepted(state: &str) -> Value {
    json!({"requestState": state,
           "inputResponses": {"gatehouse.approve": {"action": "accept"}}})
}

/// The URL and state of an `input_required` answer with the page's question.
fn asked_on_page(answer: &Value) -> (String, String) {
    assert_eq!(answer["resultType"], "input_required", "{answer}");
    let q = &answer["inputRequests"]["gatehouse.approve"]["params"];
    assert_eq!(q["mode"], "url", "{answer}");
    let state = answer["requestState"].as_str().expect("a state");
    (q["url"].as_str().unwrap().to_owned(), state.to_owned())
}

const FORM: &str = "application/x-www-form-urlencoded";

fn form_body(pairs: &[(&str, &str)]) -> String {
    form_urlencoded::Serializer::new(String::new())
        .extend_pairs(pairs)
        .finish()
}

/// POST a form to `url`, with the session `cookie` if there is one.
async fn post_form(url: &str, cookie: Option<&str>, pairs: &[(&str, &str)]) -> reqwest::Response {
    let http = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    let mut request = http.post(url).header("content-type", FORM);
    if let Some(cookie) = cookie {
        request = request.header("cookie", cookie);
    }
    request.body(form_body(pairs)).send().await.unwrap()
}

/// Sam signs in on a page and decides there, over plain HTTP (the browser tests show the
/// same page to Chromium): the decision's status (or the page's, when it shows no form).
async fn decide_over_http(url: &str, decision: &str) -> u16 {
    let signed = post_form(&format!("{url}/sign-in"), None, &[("token", SAM_TOKEN)]).await;
    assert_eq!(signed.status(), 303);
    let cookie = signed.headers()["set-cookie"].to_str().unwrap();
    let cookie = cookie.split(';').next().unwrap().to_owned();
    let page = reqwest::Client::new()
        .get(url)
        .header("cookie", &cookie)
        .send()
        .await
        .unwrap();
    if page.status() != 200 {
        return page.status().as_u16();
    }
    let text = page.text().await.unwrap();
    let csrf = text
        .split("name=\"csrf\" value=\"")
        .nth(1)
        .and_then(|rest| rest.split('"').next())
        .expect("the page has the CSRF token");
    let form = [("csrf", csrf), ("decision", decision)];
    post_form(url, Some(&cookie), &form).await.status().as_u16()
}

pub async fn a_decision_on_one_replicas_page_lets_round_two_run_on_the_other(backing: Backing) {
    let dir = tempfile::tempdir().unwrap();
    let config = gateway_config(dir.path());
    let shared = SharedState::new(backing, dir.path(), None);
    let wait = ["--approval-page-wait", "1"];
    let (a, base_a) = with_page(dir.path(), &config, &shared.arg, &wait);
    let (b, base_b) = with_page(dir.path(), &config, &shared.arg, &wait);
    let post = |url: &str, body: Value| {
        let url = url.to_owned();
        async move { http_server::post(&url, Some(SAM_TOKEN), &body).await }
    };

    let first = post(&a.url, url_round(1, json!({}))).await;
    let (url, state) = asked_on_page(first.result(1));
    let id = assert_page_url(&url, &base_a);
    // Nothing decided yet: replica B asks again about the same confirmation (at its own
    // base URL: behind a balancer every replica is given the balancer's), a new state.
    let again = post(&b.url, url_round(2, accepted(&state))).await;
    let (same, state) = asked_on_page(again.result(2));
    assert_eq!(assert_page_url(&same, &base_b), id);

    // The person decides on replica A's page; round 3 on B runs the call, once.
    assert_eq!(decide_over_http(&url, "approve").await, 200);
    let done = post(&b.url, url_round(3, accepted(&state))).await;
    assert_eq!(
        done.result(3)["structuredContent"]["hostname"],
        "jump-prod-02",
        "{}",
        done.text
    );
    for (replica, id) in [(&a.url, 4), (&b.url, 5)] {
        let replay = post(replica, url_round(id, accepted(&state))).await;
        assert!(
            replay.result(id).to_string().contains("used already"),
            "{}",
            replay.text
        );
    }
    assert_eq!(decide_over_http(&url, "deny").await, 409, "decided once");
    // Another site's form cannot sign anyone in.
    let foreign = reqwest::Client::new()
        .post(format!("{url}/sign-in"))
        .header("origin", "https://evil.example")
        .header("content-type", FORM)
        .body(form_body(&[("token", SAM_TOKEN)]))
        .send()
        .await
        .unwrap();
    assert_eq!(foreign.status(), 403);
    assert!(foreign.headers().get("set-cookie").is_none());
    let lines = shared.ledger();
    let yes: Vec<&Value> = lines.iter().filter(|l| l["answer"] == "yes").collect();
    assert_eq!(yes.len(), 1, "{lines:#?}");
    assert_eq!(yes[0]["by"], "person");
    shared.assert_ledger_verifies();
    drop((a, b));
}

#[test]
fn a_port_taken_before_the_gateway_binds_it_is_given_up_for_another() {
    let dir = tempfile::tempdir().unwrap();
    let config = gateway_config(dir.path());
    let state = dir.path().join("state.db");
    let mut ports = HeldFirst::new();
    let folder = (dir.path(), config.as_str(), state.to_str().unwrap());
    let (gw, base) = with_page_on(&mut || ports.next(), folder, &[]);
    let (offered, taken) = (&ports.offered, ports.taken());
    assert_eq!(offered.len(), 2, "the held port, then another: {offered:?}");
    assert!(!base.ends_with(&format!(":{taken}")), "{base}");
    assert!(gw.url.starts_with(&base), "{} is served at {base}", gw.url);
}
