//! OAuth end to end, against a real authorization server: oidc-provider (tests/oauth/as.mjs
//! on Node 22, `scripts/install-test-peers.sh oauth`), the reference support server as its
//! protected resource (`gatehouse serve support --http … --oauth-issuer …`), and the host
//! signing in through the real binary, its browser Debian's headless Chromium
//! (tests/oauth/browser.sh). A missing peer fails the test and names the install command.
//!
//! Here: the world every OAuth test shares, the first sign-in, refresh and sign-out, and
//! two processes refreshing at once. Beside it: [`refresh`] (a refresh refused, or the
//! authorization server down), [`issuer_change`] (the protected resource moves to another
//! authorization server), [`keychain`] (no keychain running), [`bad_input`] (forged
//! redirects and the authorization server's bad answers), [`resource_server`] (the
//! reference server's side), [`dpop`] (tokens bound to a key), [`revocation`] (a revoked
//! token refused within the bound), [`machine`] (client credentials with a private key). The gateway's OAuth tests (`gateway::oauth`) share this
//! world, with the gateway as the protected resource.

mod bad_input;
mod dpop;
mod issuer_change;
mod keychain;
mod machine;
mod refresh;
mod resource_server;
mod revocation;

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
pub(crate) const ACCESS_TOKEN_TTL: u64 = 3;

/// The authorization server, started on a free port. `env` configures it (as.mjs's header).
pub(crate) fn authorization_server(env: &[(&str, &str)]) -> Process {
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
pub(crate) fn events(server: &Process, kind: &str) -> Vec<Value> {
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

/// `gatehouse serve support --http ADDRESS --oauth-issuer ISSUER`; its URL is its
/// resource identifier.
fn protected_support(issuer: &str, address: &str) -> Process {
    protected_support_with(issuer, address, &[])
}

/// As [`protected_support`], with `more` flags.
fn protected_support_with(issuer: &str, address: &str, more: &[&str]) -> Process {
    protected_support_in(issuer, address, more, &[])
}

/// As [`protected_support_with`], with `env` in the server's environment.
fn protected_support_in(
    issuer: &str,
    address: &str,
    more: &[&str],
    env: &[(&str, &str)],
) -> Process {
    protected_server("support", issuer, address, more, env)
}

/// `gatehouse serve NAME --http ADDRESS --oauth-issuer ISSUER` with `more` flags and
/// `env`; its URL is its resource identifier.
fn protected_server(
    name: &str,
    issuer: &str,
    address: &str,
    more: &[&str],
    env: &[(&str, &str)],
) -> Process {
    let mut cmd = Command::new(crate::common::exe());
    cmd.args(["serve", name, "--http", address, "--oauth-issuer", issuer]);
    cmd.args(more);
    Spawn::new(
        in_fresh_world(cmd, env),
        format!("gatehouse serve {name} --oauth-issuer"),
    )
    .serving(Stream::Stderr, "listening on ", LIMIT)
}

/// One test's world: the authorization server, the protected resource (the support
/// server, or a gateway in front of it), a servers file naming it (and the stdio CMDB
/// beside it), and a data folder for the sign-ins.
pub(crate) struct World {
    pub(crate) issuer: Process,
    /// The protected resource.
    pub(crate) support: Process,
    pub(crate) bed: Bed,
    /// The protected resource's name in the servers file.
    name: &'static str,
}

impl World {
    fn new(as_env: &[(&str, &str)]) -> World {
        World::keeping_in(as_env, "file")
    }

    /// A world whose host keeps secrets where `credential_store` says (`file`,
    /// `keychain`, `auto`).
    fn keeping_in(as_env: &[(&str, &str)], credential_store: &str) -> World {
        let issuer = authorization_server(as_env);
        let support = protected_support(&issuer.url, "127.0.0.1:0");
        World::around(issuer, support, credential_store, json!({}))
    }

    /// The world of this authorization server and this server as `support`, whose entry's
    /// `oauth` object has `oauth`'s members too.
    fn around(issuer: Process, support: Process, credential_store: &str, oauth: Value) -> World {
        World::named("support", issuer, support, credential_store, oauth)
    }

    /// As [`World::around`], the protected resource named `name` in the servers file.
    pub(crate) fn named(
        name: &'static str,
        issuer: Process,
        support: Process,
        credential_store: &str,
        oauth: Value,
    ) -> World {
        let mut settings = json!({"allowPrivateAddresses": true});
        for (k, v) in oauth.as_object().into_iter().flatten() {
            settings[k] = v.clone();
        }
        let bed = Bed::new(
            json!({
                name: {"url": support.url, "oauth": settings},
                "cmdb": builtin_server("cmdb", json!({})),
            }),
            json!({"credentialStore": credential_store, "signInTimeoutMs": 60_000}),
        );
        World {
            issuer,
            support,
            bed,
            name,
        }
    }

    /// The support server started again at its address (so at the same URL, the same
    /// resource), now naming `issuer` as its authorization server.
    fn move_support_to(&mut self, issuer: &Process) {
        let address = reqwest::Url::parse(&self.support.url).expect("the server's URL");
        let address = format!(
            "{}:{}",
            address.host_str().unwrap(),
            address.port().unwrap()
        );
        self.support.stop();
        let url = self.support.url.clone();
        self.support = protected_support(&issuer.url, &address);
        assert_eq!(self.support.url, url, "the server is back at its URL");
    }

    /// The store's bytes as they are now (none: no store yet).
    fn store_bytes(&self) -> Option<Vec<u8>> {
        std::fs::read(self.credentials()).ok()
    }

    /// The store's document (`Null` when there is none).
    fn store_document(&self) -> Value {
        store_document_in(&self.data_dir())
    }

    pub(crate) fn data_dir(&self) -> PathBuf {
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
        credentials_in(&self.data_dir())
    }

    /// `gatehouse ARGS… --config FILE` with the world's data folder and browser, bounded,
    /// and no session bus (so no keychain).
    pub(crate) fn run(&self, args: &[&str], env: &[(&str, &str)]) -> Ran {
        self.run_under(&[], args, env)
    }

    /// As [`World::run`], the binary started by the command `wrapper` (for example
    /// `dbus-run-session --`) when it is not empty.
    fn run_under(&self, wrapper: &[&str], args: &[&str], env: &[(&str, &str)]) -> Ran {
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
        if let Some((program, first)) = wrapper.split_first() {
            let mut wrapped = Command::new(program);
            wrapped
                .args(first)
                .arg(cmd.get_program())
                .args(cmd.get_args());
            for (k, v) in cmd.get_envs() {
                match v {
                    Some(v) => wrapped.env(k, v),
                    None => wrapped.env_remove(k),
                };
            }
            wrapped
                .stdin(std::process::Stdio::null())
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped());
            cmd = wrapped;
        }
        Spawn::new(cmd, format!("gatehouse {}", args.join(" ")))
            .run()
            .wait(Duration::from_secs(90))
    }

    pub(crate) fn login(&self) -> Ran {
        self.run(&["auth", "login", self.name, "--open"], &[])
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
    pub(crate) fn kept_tokens(&self) -> Vec<String> {
        self.kept_tokens_of("")
    }

    /// As [`World::kept_tokens`], of the sign-ins at the issuer `issuer` only (every
    /// sign-in when it is empty).
    fn kept_tokens_of(&self, issuer: &str) -> Vec<String> {
        tokens_kept(
            &self.store_document(),
            issuer,
            &["access_token", "refresh_token"],
        )
    }
}

/// The client id of the (first) sign-in a store's `document` keeps.
pub(crate) fn kept_client_id(document: &Value) -> String {
    document["sign_ins"]
        .as_object()
        .and_then(|m| m.values().next())
        .and_then(|s| s["client_id"].as_str())
        .expect("the sign-in's client")
        .to_owned()
}

/// The run drafted a reply to ticket `id` (its calls went through).
pub(crate) fn assert_drafted(ran: &Ran, id: &str) {
    assert!(
        ran.answer()
            .contains(&format!("Draft reply for ticket {id}")),
        "{}\n{}",
        ran.stdout,
        ran.stderr
    );
}

/// The `WWW-Authenticate` challenge of an answer (empty when it has none).
pub(crate) fn challenge_of(answer: &reqwest::Response) -> String {
    answer
        .headers()
        .get("www-authenticate")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_owned()
}

/// The sign-in store's file under the data folder `data`.
fn credentials_in(data: &Path) -> PathBuf {
    data.join("gatehouse/oauth/credentials.json")
}

/// The sign-in store's document under the data folder `data` (`Null` when there is none).
pub(crate) fn store_document_in(data: &Path) -> Value {
    std::fs::read(credentials_in(data)).map_or(Value::Null, |b| {
        serde_json::from_slice(&b).expect("the store is JSON")
    })
}

/// The values of the tokens named `keys` (`access_token`, `refresh_token`) a store's
/// `document` keeps, of the sign-ins at the issuer `issuer` only (every sign-in when it
/// is empty).
pub(crate) fn tokens_kept(document: &Value, issuer: &str, keys: &[&str]) -> Vec<String> {
    let mut out = Vec::new();
    for secret in document["secrets"]
        .as_object()
        .into_iter()
        .flatten()
        .filter(|(name, _)| name.starts_with("tokens ") && name.ends_with(issuer))
        .map(|(_, v)| v)
    {
        let tokens: Value = secret
            .as_str()
            .and_then(|s| serde_json::from_str(s).ok())
            .unwrap_or_default();
        for key in keys {
            if let Some(t) = tokens[key].as_str() {
                out.push(t.to_owned());
            }
        }
    }
    out
}

/// No token value appears in what the runs printed.
pub(crate) fn assert_no_token_in(runs: &[&Ran], tokens: &[String]) {
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

/// A form POST to the authorization server's `path` (`pairs` form-encoded, Basic when
/// `basic` is given).
async fn post_form(
    issuer: &str,
    path: &str,
    pairs: &[(&str, &str)],
    basic: Option<(&str, &str)>,
) -> reqwest::Response {
    // A form body, encoded by the URL type (reqwest's `form` feature is off).
    let mut form = reqwest::Url::parse("http://form.invalid/").unwrap();
    form.query_pairs_mut().extend_pairs(pairs);
    let mut request = reqwest::Client::new()
        .post(format!("{issuer}{path}"))
        .header("content-type", "application/x-www-form-urlencoded")
        .body(form.query().unwrap_or_default().to_owned());
    if let Some((id, secret)) = basic {
        request = request.basic_auth(id, Some(secret));
    }
    request
        .send()
        .await
        .expect("the authorization server answers")
}

/// A token request to the authorization server: its status and JSON answer.
pub(crate) async fn token_request(
    issuer: &str,
    pairs: &[(&str, &str)],
    basic: Option<(&str, &str)>,
) -> (u16, Value) {
    let answer = post_form(issuer, "/token", pairs, basic).await;
    let status = answer.status().as_u16();
    (status, answer.json().await.expect("a JSON token response"))
}

/// Revoke `token` at the authorization server as the public client `client_id` (RFC 7009),
/// as an administrator or a sign-out elsewhere would: a refresh with it is refused after.
pub(crate) async fn revoke(issuer: &str, token: &str, client_id: &str) {
    let pairs = [("token", token), ("client_id", client_id)];
    let answer = post_form(issuer, "/token/revocation", &pairs, None).await;
    assert_eq!(answer.status().as_u16(), 200, "the revocation is accepted");
}

/// The authorization server's next `count` token requests fail: `how` is `503`, or
/// `drop` (the connection closed without an answer); a count of 0 ends that.
async fn fail_tokens(issuer: &str, count: u32, how: &str) {
    let path = format!("/__test/fail-token?count={count}&how={how}");
    let answer = post_form(issuer, &path, &[], None).await;
    assert!(answer.status().is_success(), "the test hook answers");
}

fn mode(path: &Path) -> u32 {
    std::fs::metadata(path).unwrap().permissions().mode() & 0o777
}

/// The world of the sign-in tests: short-lived access tokens, Sam in Larkfield.
fn short_lived() -> World {
    let ttl = ACCESS_TOKEN_TTL.to_string();
    World::new(&[("AS_AT_TTL", &ttl), ("AS_ORGS", "usr-sam=larkfield")])
}

/// `gatehouse auth login support --open` (started by `wrapper`, if any) fails naming the
/// server and `cause`, the store is not even created, and after it the CMDB works and
/// support is not signed in.
fn assert_login_fails_keeping_nothing(w: &World, wrapper: &[&str], cause: &str) {
    let ran = w.run_under(wrapper, &["auth", "login", "support", "--open"], &[]);
    assert_ne!(ran.status, 0, "{cause}: {}", ran.stdout);
    assert!(
        ran.stderr.contains("server support") && ran.stderr.contains(cause),
        "{wrapper:?}, {cause}: {}",
        ran.stderr
    );
    assert!(w.store_bytes().is_none(), "{cause}: nothing stored");
    let tools = w.run_under(wrapper, &["tools"], &[]);
    assert!(tools.stdout.contains("cmdb__"), "{}", tools.stderr);
    let status = w.run_under(wrapper, &["auth", "status", "--json"], &[]);
    assert_eq!(status.json()[0]["signed_in"], false, "{}", status.stderr);
}

/// The person was not sent to sign in, and no client was registered.
fn assert_no_sign_in_begun(w: &World) {
    assert_eq!(w.browser_visits(), 0, "the person was not sent to sign in");
    assert!(
        events(&w.issuer, "register").is_empty(),
        "no client registered"
    );
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
