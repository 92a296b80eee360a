//! OAuth end to end, against a real authorization server: oidc-provider (tests/oauth/as.mjs
//! on Node 22, `scripts/install-test-peers.sh oauth`), the reference support server as its
//! protected resource (`gatehouse serve support --http … --oauth-issuer …`), and the host
//! signing in through the real binary, its browser Debian's headless Chromium
//! (tests/oauth/browser.sh). A missing peer fails the test and names the install command.

use std::{
    os::unix::fs::PermissionsExt,
    path::{Path, PathBuf},
    process::Command,
    time::Duration,
};

use serde_json::{Value, json};

use crate::{
    common::{
        Bed, Ran, builtin_server, gatehouse_command, in_fresh_world,
        process::{LIMIT, Process, Spawn, Stream},
        repo_root,
    },
    interop_peers::node22,
};

/// The access tokens' lifetime at the authorization server, in seconds: short, so that a
/// refresh comes within the test.
const ACCESS_TOKEN_TTL: u64 = 3;

/// The authorization server, started on a free port. `env` configures it (as.mjs's header).
fn authorization_server(env: &[(&str, &str)]) -> Process {
    let script = repo_root().join("tests/oauth/as.mjs");
    assert!(
        repo_root()
            .join("tests/oauth/node_modules/oidc-provider/package.json")
            .exists(),
        "the test peer `oauth` is missing (tests/oauth/node_modules/oidc-provider): run `scripts/install-test-peers.sh oauth`"
    );
    let mut cmd = Command::new(node22());
    cmd.arg(script);
    for (k, v) in env {
        cmd.env(k, v);
    }
    Spawn::new(cmd, "oidc-provider (tests/oauth/as.mjs)").serving(
        Stream::Stdout,
        "listening on ",
        LIMIT,
    )
}

/// The events the authorization server logged (register, authorize, token, …), in order.
fn events(server: &Process, kind: &str) -> Vec<Value> {
    server
        .records()
        .into_iter()
        .filter(|e| e["event"] == kind)
        .collect()
}

/// The grant types of the token requests the authorization server granted, in order.
fn grant_types(server: &Process) -> Vec<Value> {
    events(server, "token")
        .iter()
        .map(|e| e["grant_type"].clone())
        .collect()
}

/// `gatehouse serve support --http 127.0.0.1:0 --oauth-issuer ISSUER`; its URL is its
/// resource identifier.
fn protected_support(issuer: &str) -> Process {
    let mut cmd = Command::new(crate::common::exe());
    cmd.args([
        "serve",
        "support",
        "--http",
        "127.0.0.1:0",
        "--oauth-issuer",
        issuer,
    ]);
    Spawn::new(
        in_fresh_world(cmd, &[]),
        "gatehouse serve support --oauth-issuer",
    )
    .serving(Stream::Stderr, "listening on ", LIMIT)
}

/// One test's world: the authorization server, the protected support server, a servers
/// file naming it (and the stdio CMDB beside it), and a data folder for the sign-ins.
struct World {
    issuer: Process,
    support: Process,
    bed: Bed,
}

impl World {
    fn new(as_env: &[(&str, &str)]) -> World {
        let issuer = authorization_server(as_env);
        let support = protected_support(&issuer.url);
        let bed = Bed::new(
            json!({
                "support": {"url": support.url, "oauth": {"allowPrivateAddresses": true}},
                "cmdb": builtin_server("cmdb", json!({})),
            }),
            json!({"credentialStore": "file", "signInTimeoutMs": 60_000}),
        );
        World {
            issuer,
            support,
            bed,
        }
    }

    fn data_dir(&self) -> PathBuf {
        self.bed.path().join("data")
    }

    fn browser_log(&self) -> PathBuf {
        self.bed.path().join("browser.log")
    }

    /// How many sign-in addresses the browser was given.
    fn browser_visits(&self) -> usize {
        std::fs::read_to_string(self.browser_log()).map_or(0, |t| t.lines().count())
    }

    /// The sign-in store's file.
    fn credentials(&self) -> PathBuf {
        self.data_dir().join("gatehouse/oauth/credentials.json")
    }

    /// `gatehouse ARGS… --config FILE` with the world's data folder and browser, bounded.
    fn run(&self, args: &[&str], env: &[(&str, &str)]) -> Ran {
        let mut args = args.to_vec();
        args.extend(["--config", self.bed.config.as_str()]);
        let browser = repo_root().join("tests/oauth/browser.sh");
        let mut all = vec![
            (
                "XDG_DATA_HOME",
                self.data_dir().to_str().unwrap().to_owned(),
            ),
            ("BROWSER", browser.to_str().unwrap().to_owned()),
            (
                "OAUTH_BROWSER_LOG",
                self.browser_log().to_str().unwrap().to_owned(),
            ),
        ];
        all.extend(env.iter().map(|(k, v)| (*k, (*v).to_owned())));
        let env: Vec<(&str, &str)> = all.iter().map(|(k, v)| (*k, v.as_str())).collect();
        let mut cmd = gatehouse_command(&args, &env);
        cmd.env_remove("DBUS_SESSION_BUS_ADDRESS");
        Spawn::new(cmd, format!("gatehouse {}", args.join(" ")))
            .run()
            .wait(Duration::from_secs(90))
    }

    fn login(&self) -> Ran {
        self.run(&["auth", "login", "support", "--open"], &[])
    }

    /// `gatehouse ask "Draft a reply to ticket ID" --yes --json`.
    fn ask_ticket(&self, id: &str) -> Ran {
        self.run(
            &[
                "ask",
                &format!("Draft a reply to ticket {id}"),
                "--yes",
                "--json",
            ],
            &[],
        )
    }

    fn status(&self) -> Value {
        let ran = self.run(&["auth", "status", "--json"], &[]);
        assert_eq!(ran.status, 0, "auth status failed: {}", ran.stderr);
        ran.json()
    }

    /// The kept tokens' values (access and refresh), read from the store, so that the
    /// test can look for them where they must not be.
    fn kept_tokens(&self) -> Vec<String> {
        let Ok(text) = std::fs::read_to_string(self.credentials()) else {
            return Vec::new();
        };
        let file: Value = serde_json::from_str(&text).expect("the store is JSON");
        let mut out = Vec::new();
        for secret in file["secrets"]
            .as_object()
            .into_iter()
            .flatten()
            .map(|(_, v)| v)
        {
            let tokens: Value = secret
                .as_str()
                .and_then(|s| serde_json::from_str(s).ok())
                .unwrap_or_default();
            for key in ["access_token", "refresh_token"] {
                if let Some(t) = tokens[key].as_str() {
                    out.push(t.to_owned());
                }
            }
        }
        out
    }
}

/// No token value appears in what the runs printed.
fn assert_no_token_in(runs: &[&Ran], tokens: &[String]) {
    assert!(!tokens.is_empty(), "there are tokens to look for");
    for ran in runs {
        for token in tokens {
            assert!(
                !ran.stdout.contains(token.as_str()) && !ran.stderr.contains(token.as_str()),
                "a token was printed"
            );
        }
    }
}

/// An MCP initialize sent to the support server with `token`: its HTTP status, its
/// `WWW-Authenticate` and its body.
async fn initialize_with(url: &str, token: &str) -> (u16, String, String) {
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "oauth-test", "version": "1"}}});
    let answer = reqwest::Client::new()
        .post(url)
        .bearer_auth(token)
        .header("accept", "application/json, text/event-stream")
        .json(&body)
        .send()
        .await
        .expect("the support server answers");
    let status = answer.status().as_u16();
    let challenge = answer
        .headers()
        .get("www-authenticate")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_owned();
    (status, challenge, answer.text().await.unwrap_or_default())
}

/// A token request to the authorization server (`pairs` form-encoded, Basic when `basic`
/// is given): its status and JSON answer.
async fn token_request(
    issuer: &str,
    pairs: &[(&str, &str)],
    basic: Option<(&str, &str)>,
) -> (u16, Value) {
    // A form body, encoded by the URL type (reqwest's `form` feature is off).
    let mut form = reqwest::Url::parse("http://form.invalid/").unwrap();
    form.query_pairs_mut().extend_pairs(pairs);
    let mut request = reqwest::Client::new()
        .post(format!("{issuer}/token"))
        .header("content-type", "application/x-www-form-urlencoded")
        .body(form.query().unwrap_or_default().to_owned());
    if let Some((id, secret)) = basic {
        request = request.basic_auth(id, Some(secret));
    }
    let answer = request
        .send()
        .await
        .expect("the authorization server answers");
    let status = answer.status().as_u16();
    (status, answer.json().await.expect("a JSON token response"))
}

fn mode(path: &Path) -> u32 {
    std::fs::metadata(path).unwrap().permissions().mode() & 0o777
}

/// The world of the sign-in tests: short-lived access tokens, Sam in Larkfield.
fn short_lived() -> World {
    let ttl = ACCESS_TOKEN_TTL.to_string();
    World::new(&[("AS_AT_TTL", &ttl), ("AS_ORGS", "usr-sam=larkfield")])
}

/// Without a terminal and without a sign-in, a run says what to do; CMDB still works.
fn assert_needs_sign_in(w: &World) -> Ran {
    let before = w.run(&["tools"], &[]);
    assert!(
        before.stderr.contains("gatehouse auth login support"),
        "{}",
        before.stderr
    );
    assert!(before.stdout.contains("cmdb__"), "{}", before.stdout);
    assert!(w.kept_tokens().is_empty());
    before
}

/// `gatehouse auth login support --open`: one registration (native, a loopback redirect),
/// one authorization for the server's URL, one code exchanged, the tokens in a 0600 file.
/// The registration event.
fn sign_in(w: &World) -> (Ran, Value) {
    let login = w.login();
    assert_eq!(login.status, 0, "{}\n{}", login.stdout, login.stderr);
    assert!(
        login.stdout.contains("Signed in to support"),
        "{}",
        login.stdout
    );
    let registered = events(&w.issuer, "register");
    assert_eq!(registered.len(), 1, "{registered:?}");
    assert_eq!(registered[0]["application_type"], "native");
    let redirect = registered[0]["redirect_uris"][0].as_str().unwrap();
    assert!(redirect.starts_with("http://127.0.0.1:") && redirect.ends_with("/callback"));
    let authorized = events(&w.issuer, "authorize");
    assert_eq!(authorized.len(), 1);
    assert_eq!(authorized[0]["resource"], w.support.url.as_str());
    let scope = authorized[0]["scope"].as_str().unwrap();
    assert!(scope.split(' ').any(|s| s == "mcp:read"), "{scope}");
    assert_eq!(grant_types(&w.issuer), vec![json!("authorization_code")]);
    assert_eq!(mode(&w.credentials()), 0o600);
    assert_eq!(w.browser_visits(), 1);
    (login, registered[0].clone())
}

/// As Sam of Larkfield: Larkfield's ticket, and not another organization's.
fn assert_calls_as_sam(w: &World) -> Vec<Ran> {
    let own = w.ask_ticket("T-30002");
    let answer = own.answer();
    assert!(
        answer.contains("Draft reply for ticket T-30002"),
        "{answer}"
    );
    let other = w.ask_ticket("T-40003");
    let answer = other.answer();
    assert!(
        answer.contains("there is no ticket T-40003 in this organization"),
        "{answer}"
    );
    vec![own, other]
}

#[tokio::test(flavor = "multi_thread")]
async fn signs_in_calls_as_the_user_refreshes_and_signs_out() {
    let w = short_lived();
    let mut runs = vec![assert_needs_sign_in(&w)];
    let (login, registered) = sign_in(&w);
    runs.push(login);
    let first_tokens = w.kept_tokens();
    runs.extend(assert_calls_as_sam(&w));
    let status = w.status();
    assert_eq!(status[0]["server"], "support");
    assert_eq!(status[0]["signed_in"], true);
    assert_eq!(status[0]["issuer"], w.issuer.url.as_str());
    assert_eq!(status[0]["refreshable"], true);

    // The access token expires; the next run refreshes (no browser, no registration) and
    // keeps the rotated tokens.
    tokio::time::sleep(Duration::from_secs(ACCESS_TOKEN_TTL + 1)).await;
    runs.extend(assert_calls_as_sam(&w));
    let grants = grant_types(&w.issuer);
    assert!(grants.contains(&json!("refresh_token")), "{grants:?}");
    assert_eq!(events(&w.issuer, "register").len(), 1);
    assert_eq!(w.browser_visits(), 1);
    let refreshed = w.kept_tokens();
    assert_ne!(refreshed, first_tokens, "the refresh's tokens are kept");

    // No token in what any run printed, in `auth status`, or in a --record file.
    let record = w.bed.path().join("rec.jsonl");
    let record_arg = record.to_str().unwrap();
    runs.push(w.run(&["auth", "status"], &[]));
    runs.push(w.run(
        &[
            "ask",
            "Draft a reply to ticket T-30002",
            "--yes",
            "--json",
            "--record",
            record_arg,
        ],
        &[],
    ));
    let all_tokens: Vec<String> = first_tokens
        .iter()
        .chain(&refreshed)
        .chain(&w.kept_tokens())
        .cloned()
        .collect();
    assert_no_token_in(&runs.iter().collect::<Vec<_>>(), &all_tokens);
    let recorded = std::fs::read_to_string(&record).unwrap();
    assert!(
        all_tokens.iter().all(|t| !recorded.contains(t.as_str())),
        "a token reached the record"
    );

    assert_signs_out(&w, registered["client_id"].as_str().unwrap()).await;
}

/// Signing out revokes at the authorization server (the refresh token is dead there
/// after) and keeps nothing.
async fn assert_signs_out(w: &World, client_id: &str) {
    let refresh_token = w.kept_tokens().pop().expect("a refresh token is kept");
    let logout = w.run(&["auth", "logout", "support"], &[]);
    assert_eq!(logout.status, 0, "{}", logout.stderr);
    assert!(
        logout.stdout.contains("its tokens revoked there"),
        "{}",
        logout.stdout
    );
    let pairs = [
        ("grant_type", "refresh_token"),
        ("refresh_token", refresh_token.as_str()),
        ("client_id", client_id),
    ];
    let (status, answer) = token_request(&w.issuer.url, &pairs, None).await;
    assert_eq!(
        (status, answer["error"].as_str()),
        (400, Some("invalid_grant")),
        "{answer}"
    );
    assert!(w.kept_tokens().is_empty());
    assert_eq!(w.status()[0]["signed_in"], false);
}

/// Two runs whose access token expired, started at once: the refresh is locked across
/// processes, so neither presents a refresh token the other has rotated away (which
/// oidc-provider treats as a stolen token and answers by revoking the whole grant).
/// Both work, and so does a third run after them, without a browser.
#[test]
fn two_runs_refreshing_at_once_keep_working_credentials() {
    let w = short_lived();
    sign_in(&w);
    std::thread::sleep(Duration::from_secs(ACCESS_TOKEN_TTL + 1));
    let (a, b) = std::thread::scope(|s| {
        let a = s.spawn(|| w.run(&["tools"], &[]));
        let b = s.spawn(|| w.run(&["tools"], &[]));
        (a.join().unwrap(), b.join().unwrap())
    });
    for ran in [&a, &b, &w.run(&["tools"], &[])] {
        assert!(
            ran.stdout.contains("support__get_ticket"),
            "{}\n{}",
            ran.stdout,
            ran.stderr
        );
    }
    assert!(
        events(&w.issuer, "token_error").is_empty(),
        "{:?}",
        w.issuer.lines()
    );
    assert!(events(&w.issuer, "grant_revoked").is_empty());
    assert!(grant_types(&w.issuer).contains(&json!("refresh_token")));
    assert_eq!(w.browser_visits(), 1);
}

/// Wait for the host's sign-in address in the browser log.
fn sign_in_address(log: &Path) -> reqwest::Url {
    for _ in 0..300 {
        let first = std::fs::read_to_string(log)
            .ok()
            .and_then(|t| t.lines().next().map(str::to_owned));
        if let Some(line) = first {
            return reqwest::Url::parse(&line).expect("the sign-in address is a URL");
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    panic!("the host opened no sign-in address within 30 s");
}

fn param(url: &reqwest::Url, name: &str) -> String {
    url.query_pairs()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.into_owned())
        .unwrap_or_else(|| panic!("the sign-in address has no {name}"))
}

/// Redirects to the host's listener that the authorization server did not send: a wrong
/// `state`; the right state with another issuer's `iss`. Each fails the sign-in naming
/// the cause, no code is exchanged, and nothing is kept.
#[test]
fn refuses_a_forged_redirect_and_keeps_nothing() {
    let w = World::new(&[]);
    let rt = tokio::runtime::Runtime::new().unwrap();
    for (right_state, iss, cause) in [
        (false, w.issuer.url.clone(), "its state differs"),
        (true, "http://127.0.0.1:9".to_owned(), "its iss differs"),
    ] {
        let _ = std::fs::remove_file(w.browser_log());
        let ran = std::thread::scope(|s| {
            let login = s.spawn(|| {
                w.run(
                    &["auth", "login", "support", "--open"],
                    &[("OAUTH_BROWSER_ONLY_LOG", "1")],
                )
            });
            let address = sign_in_address(&w.browser_log());
            let mut forged = reqwest::Url::parse(&param(&address, "redirect_uri")).unwrap();
            let state = if right_state {
                param(&address, "state")
            } else {
                "forged-state".to_owned()
            };
            forged
                .query_pairs_mut()
                .append_pair("code", "forged-code")
                .append_pair("state", &state)
                .append_pair("iss", &iss);
            let _ = rt.block_on(reqwest::get(forged));
            login.join().expect("the login run is read")
        });
        assert_ne!(ran.status, 0, "{}", ran.stdout);
        assert!(
            ran.stderr.contains("server support") && ran.stderr.contains(cause),
            "{}",
            ran.stderr
        );
        assert!(
            events(&w.issuer, "token").is_empty(),
            "no code was exchanged"
        );
        assert!(w.kept_tokens().is_empty());
        assert_eq!(w.status()[0]["signed_in"], false);
    }
}

/// The support server takes only tokens for itself: a client-credentials token the
/// authorization server issued for another resource is refused (401 `invalid_token`), one
/// for it accepted (then the caller's membership decides), a made-up one refused.
#[tokio::test(flavor = "multi_thread")]
async fn the_server_refuses_a_token_for_another_resource() {
    let w = World::new(&[
        ("AS_CC_CLIENT", "machine:machine-secret"),
        ("AS_RESOURCE_PATTERN", "^http://127\\.0\\.0\\.1:[0-9]+/mcp$"),
    ]);
    let token_for = |resource: String| {
        let issuer = w.issuer.url.clone();
        async move {
            let pairs = [
                ("grant_type", "client_credentials"),
                ("scope", "mcp:read"),
                ("resource", resource.as_str()),
            ];
            let (_, answer) =
                token_request(&issuer, &pairs, Some(("machine", "machine-secret"))).await;
            answer["access_token"]
                .as_str()
                .unwrap_or_else(|| panic!("no access token: {answer}"))
                .to_owned()
        }
    };
    let other = token_for("http://127.0.0.1:1/mcp".to_owned()).await;
    let own = token_for(w.support.url.clone()).await;
    let (status, challenge, _) = initialize_with(&w.support.url, &other).await;
    assert_eq!(status, 401);
    assert!(
        challenge.contains("error=\"invalid_token\"") && challenge.contains("another resource"),
        "{challenge}"
    );
    // Its own token is accepted; the machine client is no member of any organization.
    let (status, _, body) = initialize_with(&w.support.url, &own).await;
    assert_eq!(status, 403, "{body}");
    assert!(body.contains("no access to this organization"), "{body}");
    let (status, challenge, _) = initialize_with(&w.support.url, "not-a-token").await;
    assert_eq!(status, 401);
    assert!(challenge.contains("not a JWT"), "{challenge}");
}
