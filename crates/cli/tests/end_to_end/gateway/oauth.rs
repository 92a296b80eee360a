//! `gatehouse gateway --http --oauth-issuer` in front of the reference support server: a
//! client signs in through the real authorization server (oidc-provider, the OAuth
//! tests' `World`) and calls through the gateway as that person; the gateway checks its
//! tokens exactly as a reference server does; the support server behind it (`serve
//! support --http --tokens`, reached through an nginx tap that writes down every
//! `Authorization` header) sees the gateway's own credential from its servers file and
//! never the client's token; and the gateway's sealed approval state is bound to the
//! OAuth caller.

mod dpop;
mod revocation;

use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::{assert_approved_in_the_client, last_line_of, ledger_lines};
use crate::{
    common::{
        http_server::{Answer, JUN, call_tool, post, request},
        nginx::{Nginx, start_tap},
        process::Process,
        repo_root,
        serve::{SAM_TOKEN, serve_http, tokens_file},
        write,
    },
    interop_peers::{python, run_peer, script},
    oauth::{
        World, assert_no_token_in, authorization_server, events, store_document_in, token_request,
        tokens_kept,
    },
};

/// The gateway's name in the host's servers file.
const GATEWAY: &str = "gw";
/// The tool the gateway's rules ask about, as the gateway names it.
const ASKED: &str = "support__get_ticket";
/// The variable the gateway's servers file takes its credential for the support server
/// from.
const CREDENTIAL_VAR: &str = "GATEWAY_SUPPORT_TOKEN";
/// The gateway's credential at the support server: Jun of Larkfield (staff), so that the
/// server's records tell the gateway's identity from the callers' (Sam, Omar).
const GATEWAY_CREDENTIAL: &str = JUN;
/// Whom the support server takes the gateway for.
const GATEWAY_USER: &str = "usr-jun";
/// The gateway's client at the authorization server for token introspection.
const INTROSPECTION_CLIENT: (&str, &str) = ("gateway-rs", "rs-secret");
/// Where the gateway reads that client's secret.
const INTROSPECTION_SECRET_VAR: &str = "GATEHOUSE_OAUTH_INTROSPECTION_SECRET";
/// The pre-registered client-credentials client of the refusal tests.
const MACHINE: (&str, &str) = ("machine", "machine-secret");

/// The gateway's world: the authorization server and the gateway (in `host`, the host's
/// servers file naming the gateway), the support server behind it and the tap between.
struct GatewayWorld {
    host: World,
    tap: Nginx,
    behind: Process,
    dir: tempfile::TempDir,
}

impl GatewayWorld {
    /// Everything started, the authorization server configured by `as_env` (Sam and
    /// Omar both of Larkfield).
    fn new(as_env: &[(&str, &str)]) -> GatewayWorld {
        GatewayWorld::with(as_env, &[])
    }

    /// As [`GatewayWorld::new`], the gateway started with `more` flags.
    fn with(as_env: &[(&str, &str)], more: &[&str]) -> GatewayWorld {
        let mut env = vec![("AS_ORGS", "usr-sam=larkfield,usr-omar=larkfield")];
        env.extend_from_slice(as_env);
        let issuer = authorization_server(&env);
        let dir = tempfile::tempdir().unwrap();
        let tokens = tokens_file(dir.path());
        let behind = serve_http("support", &tokens, &dir.path().join("tickets.db"));
        let tap = start_tap(dir.path(), port_of(&behind.url));
        let gateway = start_gateway(dir.path(), &tap.url, &issuer.url, more);
        let host = World::named(GATEWAY, issuer, gateway, "file", json!({}));
        GatewayWorld {
            host,
            tap,
            behind,
            dir,
        }
    }

    fn url(&self) -> &str {
        &self.host.support.url
    }

    fn issuer(&self) -> &str {
        &self.host.issuer.url
    }

    /// The gateway's ledger.
    fn ledger(&self) -> Vec<Value> {
        ledger_lines(&self.dir.path().join("ledger.jsonl"))
    }

    /// `gatehouse ask "Draft a reply to ticket ID"` through the gateway, the gateway's
    /// approval form answered yes.
    fn ask_ticket(&self, id: &str) -> crate::common::Ran {
        let question = format!("Draft a reply to ticket {id}");
        let args = [
            "ask",
            &question,
            "--yes",
            "--answer",
            "approve=true",
            "--json",
        ];
        self.host.run(&args, &[])
    }

    /// Sign in through the host as `account` (the authorization server's automatic login
    /// switched to them), the sign-in kept in a data folder of their own: their access
    /// token.
    async fn access_token_of(&self, account: &str) -> String {
        let path = format!("/__test/login?account={account}");
        let answer = reqwest::Client::new()
            .post(format!("{}{path}", self.issuer()))
            .send()
            .await
            .expect("the authorization server answers");
        assert!(answer.status().is_success(), "the test hook answers");
        let data = self.dir.path().join(format!("data-{account}"));
        let data_arg = data.to_str().unwrap();
        let login = self.host.run(
            &["auth", "login", GATEWAY, "--open"],
            &[("XDG_DATA_HOME", data_arg)],
        );
        assert_eq!(login.status, 0, "{}\n{}", login.stdout, login.stderr);
        let kept = tokens_kept(&store_document_in(&data), "", &["access_token"]);
        kept.into_iter().next().expect("an access token is kept")
    }
}

fn port_of(url: &str) -> u16 {
    let url = reqwest::Url::parse(url).expect("a URL");
    url.port().expect("a port")
}

/// The gateway's servers file: the support server at `url` with the gateway's own
/// credential (from [`CREDENTIAL_VAR`]), the rules (ask before `support__get_ticket`,
/// allow the rest) and the ledger.
fn gateway_config(dir: &std::path::Path, url: &str) -> String {
    write(
        dir,
        "gateway.json",
        &json!({
            "mcpServers": {"support": {"url": url, "headers": {
                "Authorization": format!("Bearer ${{{CREDENTIAL_VAR}}}")}}},
            "gatehouse": {
                "rules": [
                    {"tool": ASKED, "decision": "ask", "reason": "tickets hold customers' words"},
                    {"tool": "support__*", "decision": "allow"}
                ],
                "ledger": {"path": dir.join("ledger.jsonl"), "arguments": true}
            }
        }),
    )
}

/// `gatehouse gateway --http 127.0.0.1:0 --oauth-issuer ISSUER --tokens FILE` (and `more`
/// flags) in front of the support server at `support`, with its credential in its
/// environment only.
fn start_gateway(dir: &std::path::Path, support: &str, issuer: &str, more: &[&str]) -> Process {
    let config = gateway_config(dir, support);
    let tokens = tokens_file(dir);
    let state = dir.join("state.db");
    let mut args = super::http_args(&config, "127.0.0.1:0", state.to_str().unwrap());
    args.extend_from_slice(&[
        "--oauth-issuer",
        issuer,
        "--tokens",
        tokens.to_str().unwrap(),
    ]);
    args.extend_from_slice(more);
    // The introspection client's secret too, for the tests that name that client.
    let env = [
        (CREDENTIAL_VAR, GATEWAY_CREDENTIAL),
        (INTROSPECTION_SECRET_VAR, INTROSPECTION_CLIENT.1),
    ];
    super::gateway_process(&args, &env)
}

/// A client-credentials access token for `resource` with `scope`, from `issuer`.
async fn machine_token(issuer: &str, resource: &str, scope: &str) -> String {
    let pairs = [
        ("grant_type", "client_credentials"),
        ("scope", scope),
        ("resource", resource),
    ];
    let (status, answer) = token_request(issuer, &pairs, Some(MACHINE)).await;
    assert_eq!(status, 200, "{answer}");
    answer["access_token"]
        .as_str()
        .unwrap_or_else(|| panic!("no access token: {answer}"))
        .to_owned()
}

/// `tools/list` at the gateway with `token` (none: no `Authorization` header).
async fn list_with(url: &str, token: Option<&str>) -> Answer {
    post(url, token, &request(1, "tools/list", json!({}))).await
}

/// The `WWW-Authenticate` of an answer.
fn challenge(answer: &Answer) -> String {
    answer
        .headers
        .get("www-authenticate")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_owned()
}

/// A 401 `invalid_token` saying `why`.
fn assert_invalid_token(answer: &Answer, why: &str) {
    assert_eq!(answer.status, 401, "{why}: {}", answer.text);
    let challenge = challenge(answer);
    assert!(
        challenge.contains("error=\"invalid_token\"") && challenge.contains(why),
        "{why}: {challenge}"
    );
}

/// The tap saw only the gateway's own credential: at least one request, and each with
/// exactly that `Authorization` (so none with a client's token).
fn assert_only_the_gateways_credential_behind(w: &GatewayWorld) {
    let seen = w.tap.authorizations();
    assert!(!seen.is_empty(), "the tap saw the gateway's requests");
    let own = format!("Bearer {GATEWAY_CREDENTIAL}");
    for line in &seen {
        assert_eq!(
            line, &own,
            "a request behind the gateway carried another credential"
        );
    }
}

/// The host signs in to the gateway through the authorization server (Chromium as the
/// person), asking for `mcp:write` as the gateway's challenge says (every call through it
/// writes), lists and calls through it as Sam of Larkfield: the gateway's form is
/// answered in the host, the gateway's ledger names Sam, the server behind sees only the
/// gateway's own credential (Jun's), and no token is printed by anyone.
#[test]
fn the_host_signs_in_through_the_authorization_server_and_calls_through_the_gateway() {
    let w = GatewayWorld::new(&[]);
    let before = w.host.run(&["tools"], &[]);
    assert!(
        before.stderr.contains("gatehouse auth login gw"),
        "{}",
        before.stderr
    );

    let login = w.host.login();
    assert_eq!(login.status, 0, "{}\n{}", login.stdout, login.stderr);
    let authorized = events(&w.host.issuer, "authorize");
    assert_eq!(authorized.len(), 1, "{authorized:?}");
    assert_eq!(
        authorized[0]["resource"],
        w.url(),
        "the gateway is the resource"
    );
    let scope = authorized[0]["scope"].as_str().unwrap_or_default();
    assert!(scope.split(' ').any(|s| s == "mcp:write"), "{scope}");

    let tools = w.host.run(&["tools"], &[]);
    assert!(
        tools.stdout.contains("gw__support__get_ticket"),
        "{}\n{}",
        tools.stdout,
        tools.stderr
    );
    let own = w.ask_ticket("T-30002");
    let answer = own.answer();
    assert!(
        answer.contains("Draft reply for ticket T-30002"),
        "{answer}\n{}",
        own.stderr
    );
    // The server behind acts as the gateway's credential, Jun of Larkfield: another
    // organization's ticket is not found there either.
    let other = w.ask_ticket("T-40003");
    let answer = other.answer();
    assert!(
        answer.contains("there is no ticket T-40003 in this organization"),
        "{answer}"
    );

    let lines = w.ledger();
    assert_approved_in_the_client(last_line_of(&lines, ASKED), "usr-sam@larkfield");
    assert!(
        lines.iter().all(|l| l["caller"] == "usr-sam@larkfield"),
        "{lines:#?}"
    );
    let calls: Vec<Value> = w
        .behind
        .records()
        .into_iter()
        .filter(|r| r["event"] == "tool_call")
        .collect();
    assert!(!calls.is_empty(), "{:?}", w.behind.lines());
    assert!(
        calls.iter().all(|r| r["user"] == GATEWAY_USER),
        "the server behind sees the gateway's credential: {calls:?}"
    );

    let tokens = w.host.kept_tokens();
    assert_only_the_gateways_credential_behind(&w);
    assert_no_token_in(&[&login, &tools, &own, &other], &tokens);
    let gateway_log = w.host.support.lines().join("\n");
    assert!(
        tokens.iter().all(|t| !gateway_log.contains(t.as_str())),
        "a token reached the gateway's log"
    );
}

/// What the gateway refuses, as the reference servers' resource-server checks say: no
/// token (401 naming the gateway's metadata, which names the issuer), a token for
/// another resource, from another authorization server, or expired (401
/// `invalid_token`), a token without `mcp:write` for a call (403 `insufficient_scope`,
/// nothing sent behind). The tokens file's bearer tokens are accepted beside.
#[tokio::test(flavor = "multi_thread")]
async fn the_gateway_refuses_what_a_protected_reference_server_refuses() {
    // Access tokens live 1 s; the checks allow `CLOCK_LEEWAY` past that.
    let w = GatewayWorld::new(&[
        ("AS_CC_CLIENT", "machine:machine-secret"),
        ("AS_AT_TTL", "1"),
    ]);
    let url = w.url().to_owned();
    let full = machine_token(w.issuer(), &url, "mcp:read mcp:write").await;
    let issued = Instant::now();

    let none = list_with(&url, None).await;
    assert_eq!(none.status, 401, "{}", none.text);
    let metadata_url = format!(
        "http://127.0.0.1:{}/.well-known/oauth-protected-resource/mcp",
        port_of(&url)
    );
    let named = challenge(&none);
    assert!(
        named.contains(&format!("resource_metadata=\"{metadata_url}\""))
            && named.contains("scope=\"mcp:read mcp:write\""),
        "{named}"
    );
    let metadata: Value = reqwest::get(&metadata_url)
        .await
        .expect("the gateway serves its metadata")
        .json()
        .await
        .expect("the metadata is JSON");
    assert_eq!(metadata["resource"], url.as_str(), "{metadata}");
    assert_eq!(metadata["authorization_servers"], json!([w.issuer()]));
    assert_eq!(
        metadata["scopes_supported"],
        json!(["mcp:read", "mcp:write"])
    );

    let for_another = machine_token(w.issuer(), "http://127.0.0.1:1/mcp", "mcp:read").await;
    assert_invalid_token(
        &list_with(&url, Some(&for_another)).await,
        "another resource",
    );
    let elsewhere = authorization_server(&[("AS_CC_CLIENT", "machine:machine-secret")]);
    let foreign = machine_token(&elsewhere.url, &url, "mcp:read mcp:write").await;
    assert_invalid_token(
        &list_with(&url, Some(&foreign)).await,
        "a key the issuer does not publish",
    );
    assert_invalid_token(&list_with(&url, Some("not-a-token")).await, "not a JWT");

    // Reading only: the list, but no call (every call through the gateway writes, as far
    // as it can vouch), and nothing reaches the server behind.
    let reader = machine_token(w.issuer(), &url, "mcp:read").await;
    let listed = list_with(&url, Some(&reader)).await;
    assert_eq!(listed.status, 200, "{}", listed.text);
    assert!(listed.text.contains(ASKED), "{}", listed.text);
    let behind_before = w.tap.authorizations().len();
    let args = json!({"query": "refund"});
    let refused = call_tool(&url, &reader, 2, "support__search_knowledge", args.clone()).await;
    assert_eq!(refused.status, 403, "{}", refused.text);
    let named = challenge(&refused);
    assert!(
        named.contains("error=\"insufficient_scope\"")
            && named.contains("scope=\"mcp:read mcp:write\""),
        "{named}"
    );
    assert_eq!(
        w.tap.authorizations().len(),
        behind_before,
        "nothing sent behind"
    );

    // Both scopes: the call runs, as the token's subject; a tokens-file token works too.
    let done = call_tool(&url, &full, 3, "support__search_knowledge", args.clone()).await;
    assert_eq!(done.result(3)["isError"], false, "{}", done.text);
    let by_file = call_tool(
        &url,
        SAM_TOKEN,
        4,
        "support__search_knowledge",
        args.clone(),
    )
    .await;
    assert_eq!(by_file.result(4)["isError"], false, "{}", by_file.text);
    let lines = w.ledger();
    let callers: Vec<&Value> = lines.iter().map(|l| &l["caller"]).collect();
    assert_eq!(callers, [&json!("machine@"), &json!("usr-sam@larkfield")]);

    let leeway = gatehouse_http::oauth::CLOCK_LEEWAY;
    let expired_at = issued + Duration::from_secs(1) + leeway + Duration::from_secs(2);
    tokio::time::sleep_until(expired_at.into()).await;
    assert_invalid_token(&list_with(&url, Some(&full)).await, "expired");
    assert_only_the_gateways_credential_behind(&w);
}

/// The approval form under OAuth identity: Sam's call that asks gets the gateway's form
/// and a sealed state; the same state with Omar's token (another person signed in at the
/// same authorization server) is refused, and runs nothing; with Sam's it runs, once.
#[tokio::test(flavor = "multi_thread")]
async fn the_approval_state_is_bound_to_the_oauth_caller() {
    let w = GatewayWorld::new(&[]);
    let url = w.url().to_owned();
    let sam = w.access_token_of("usr-sam").await;
    let omar = w.access_token_of("usr-omar").await;
    assert_ne!(sam, omar);
    let arguments = json!({"ticket_id": "T-30002"});

    let asked = call_tool(&url, &sam, 1, ASKED, arguments.clone()).await;
    let asked = asked.result(1);
    assert_eq!(asked["resultType"], "input_required", "{asked}");
    let form = &asked["inputRequests"]["gatehouse.approve"];
    let message = form["params"]["message"].as_str().unwrap_or_default();
    assert!(
        message.contains(ASKED) && message.contains("T-30002"),
        "{asked}"
    );
    let state = asked["requestState"].as_str().expect("a sealed state");
    let approve = |id: i64| {
        let answer = json!({"action": "accept", "content": {"approve": true}});
        let params = json!({"name": ASKED, "arguments": arguments, "requestState": state,
                            "inputResponses": {"gatehouse.approve": answer}});
        request(id, "tools/call", params)
    };
    let behind_before = w.tap.authorizations().len();
    let stolen = post(&url, Some(&omar), &approve(2)).await;
    assert_eq!(stolen.error_code(2), -32602, "{}", stolen.text);
    assert_eq!(w.tap.authorizations().len(), behind_before, "nothing ran");

    let own = post(&url, Some(&sam), &approve(3)).await;
    let own = own.result(3);
    assert_eq!(own["isError"], false, "{own}");
    assert_eq!(own["structuredContent"]["ticket_id"], "T-30002", "{own}");

    let lines = w.ledger();
    let yes: Vec<&Value> = lines.iter().filter(|l| l["answer"] == "yes").collect();
    assert_eq!(yes.len(), 1, "{lines:#?}");
    assert_approved_in_the_client(yes[0], "usr-sam@larkfield");
    assert!(
        lines.iter().all(|l| l["caller"] != "usr-omar@larkfield"),
        "Omar's round 2 decided nothing: {lines:#?}"
    );
    // Omar's token is Omar, a caller of his own: his call is his ledger line.
    let search = json!({"query": "refund"});
    let his = call_tool(&url, &omar, 4, "support__search_knowledge", search).await;
    assert_eq!(his.result(4)["isError"], false, "{}", his.text);
    let lines = w.ledger();
    let line = last_line_of(&lines, "support__search_knowledge");
    assert_eq!(line["caller"], "usr-omar@larkfield", "{line}");
    assert_only_the_gateways_credential_behind(&w);
}

/// A foreign client, the Python SDK's own OAuth provider (`tests/peers/py_oauth.py`):
/// it signs in once through the authorization server with Chromium as the person, for
/// the scopes the gateway's challenge names, and calls through the gateway as Sam; the
/// server behind sees only the gateway's credential. (With only `mcp:read` in the
/// challenge the SDK registered for that scope and oidc-provider refused its step-up
/// for `mcp:write` as `invalid_scope`: see `Writes::basic`.)
#[test]
fn the_python_sdks_oauth_client_signs_in_and_calls_through_the_gateway() {
    let w = GatewayWorld::new(&[]);
    let browser = repo_root().join("tests/oauth/browser.sh");
    let log = w.dir.path().join("python-browser.log");
    let args = json!({"query": "refund"}).to_string();
    let argv = [
        script("py_mcp_client.py"),
        "--mode".into(),
        "auto".into(),
        "--call".into(),
        "support__search_knowledge".into(),
        "--args".into(),
        args,
        "--oauth-browser".into(),
        browser.to_string_lossy().into_owned(),
        "--url".into(),
        w.url().to_owned(),
    ];
    let argv: Vec<&str> = argv.iter().map(String::as_str).collect();
    let env = [("OAUTH_BROWSER_LOG", log.to_str().unwrap())];
    let ran = run_peer(&python(), &argv, &env, None);
    let out: Value = serde_json::from_str(&ran.stdout)
        .unwrap_or_else(|e| panic!("no JSON ({e}):\n{}\n{}", ran.stdout, ran.stderr));
    assert_eq!(out["protocolVersion"], "2026-07-28", "{out}");
    assert_eq!(
        out["calls"][0]["result"]["isError"], false,
        "{out}\n{}",
        ran.stderr
    );
    let authorized = events(&w.host.issuer, "authorize");
    assert_eq!(authorized.len(), 1, "{authorized:?}");
    assert_eq!(out["sign_ins"], 1, "{out}");
    let last = &authorized[0];
    assert_eq!(last["resource"], w.url(), "{authorized:?}");
    let scope = last["scope"].as_str().unwrap_or_default();
    assert!(scope.split(' ').any(|s| s == "mcp:write"), "{authorized:?}");
    let lines = w.ledger();
    let line = last_line_of(&lines, "support__search_knowledge");
    assert_eq!(line["caller"], "usr-sam@larkfield", "{line}");
    assert_eq!(line["decision"], "run", "{line}");
    assert_only_the_gateways_credential_behind(&w);
}

/// The OAuth flags are one definition: `gateway` refuses what `serve` refuses, with the
/// same words (an issuer without `--http`, a resource without an issuer, `--no-auth`
/// beside an issuer, an issuer that is not a URL).
#[test]
fn the_gateways_oauth_flags_are_checked_as_serves_are() {
    let dir = tempfile::tempdir().unwrap();
    let config = write(dir.path(), "empty.json", &json!({"mcpServers": {}}));
    let issuer = "http://127.0.0.1:9";
    let cases: [(&[&str], &str); 4] = [
        (&["--oauth-issuer", issuer], "--http <IP:PORT>"),
        (
            &[
                "--http",
                "127.0.0.1:0",
                "--oauth-resource",
                "http://127.0.0.1:9/mcp",
            ],
            "--oauth-issuer <URL>",
        ),
        (
            &[
                "--http",
                "127.0.0.1:0",
                "--no-auth",
                "--oauth-issuer",
                issuer,
            ],
            "cannot be used with",
        ),
        (
            &["--http", "127.0.0.1:0", "--oauth-issuer", "not a url"],
            "--oauth-issuer \"not a url\" is not a URL",
        ),
    ];
    for (flags, says) in cases {
        let serve = [&["serve", "support"][..], flags].concat();
        let gateway = [&["gateway", "--config", config.as_str()][..], flags].concat();
        for args in [serve, gateway] {
            let ran = crate::common::run(&args, &[]);
            assert_ne!(ran.status, 0, "{args:?}");
            assert!(ran.stderr.contains(says), "{args:?}: {}", ran.stderr);
        }
    }
}
