//! The approval page under `--oauth-issuer`: people sign in on it through the same real
//! authorization server (oidc-provider, `tests/oauth/as.mjs`, with the page registered
//! as a confidential web client, `AS_WEB_CLIENT`) as their MCP clients. The Python SDK
//! client that takes only URL questions signs in with its own OAuth provider as Sam and
//! makes a call the policy asks about; in headless Chromium Omar signs in at the issuer
//! and gets 404, Sam signs in there, sees the call and approves it, and it runs once;
//! the sign-in's callback replayed signs nobody in. With the tokens file beside, the page
//! offers both ways in, and a wrong `iss`, a used, made-up or other browser's `state`,
//! and the issuer's own refusal each end on a page that says so, approving nothing.

use serde_json::Value;

use super::{
    ASKED, Backing, SharedState, asked_args, gateway_config, http_args, last_line_of,
    page::{UrlClient, assert_page_url, assert_url_questions, in_chromium_with},
    try_gateway_process,
};
use crate::{
    common::{ports::on_a_free_port, process::Process, repo_root, serve::tokens_file},
    oauth::{authorization_server, events},
};

/// The page's client at the authorization server, and its secret (given to the gateway
/// in its environment, as an operator would).
pub const PAGE_CLIENT: (&str, &str) = ("gw-page", "page-secret-5d1f");
/// Where the gateway takes the page's client secret from.
pub const SECRET_ENV: &str = "GATEHOUSE_APPROVAL_PAGE_CLIENT_SECRET";

/// The authorization server, Sam and Omar of larkfield its users, with the page's client
/// ([`PAGE_CLIENT`]) registered for the callback of a page at `base`.
pub fn page_issuer(base: &str) -> Process {
    let (id, secret) = PAGE_CLIENT;
    let web_client = format!("{id}:{secret}:{base}/approve/callback");
    authorization_server(&[
        ("AS_ORGS", "usr-sam=larkfield,usr-omar=larkfield"),
        ("AS_WEB_CLIENT", &web_client),
    ])
}

/// The authorization server and a gateway behind `--oauth-issuer` with its approval page,
/// the page's client registered there for the page's callback.
struct OAuthPage {
    issuer: Process,
    gateway: Process,
    base: String,
    shared: SharedState,
    dir: tempfile::TempDir,
}

impl OAuthPage {
    /// Started, the state in `backing`, with the tokens file as a way in too if `tokens`.
    fn start(backing: Backing, tokens: bool) -> OAuthPage {
        let (id, secret) = PAGE_CLIENT;
        let dir = tempfile::tempdir().unwrap();
        let config = gateway_config(dir.path());
        let shared = SharedState::new(backing, dir.path(), None);
        let file = tokens_file(dir.path());
        // The page's callback is registered at the issuer before the gateway binds its
        // port: on another port, both again.
        let (issuer, gateway, base) = on_a_free_port("the gateway with its page", |port| {
            let base = format!("http://127.0.0.1:{port}");
            let issuer = page_issuer(&base);
            let addr = format!("127.0.0.1:{port}");
            let mut args = http_args(&config, &addr, &shared.arg);
            args.extend_from_slice(&["--oauth-issuer", &issuer.url, "--approval-page", &base]);
            args.extend_from_slice(&["--approval-page-client-id", id]);
            if tokens {
                args.extend_from_slice(&["--tokens", file.to_str().unwrap()]);
            }
            let gateway = try_gateway_process(&args, &[(SECRET_ENV, secret)])?;
            Ok((issuer, gateway, base))
        });
        OAuthPage {
            issuer,
            gateway,
            base,
            shared,
            dir,
        }
    }

    /// The URL-only Python client calling the asked tool, signed in as `auth` says.
    fn client(&self, auth: &[&str]) -> UrlClient {
        UrlClient::signed_in_by(
            &self.gateway.url,
            self.dir.path(),
            "auto",
            &asked_args(),
            auth,
        )
    }

    /// The browser script's OAuth `scenario` on the page at `url`.
    fn in_chromium(&self, scenario: &str, url: &str) {
        in_chromium_with(scenario, &[url, &self.issuer.url, "usr-omar"]);
    }

    /// The call ran once, approved by Sam on the page: one `yes` in the ledger.
    fn assert_approved_once(&self, out: &Value, url: &str) {
        assert!(assert_url_questions(out, url) >= 1, "{out}");
        assert_eq!(out["result"]["isError"], false, "{out}");
        assert_eq!(
            out["result"]["structuredContent"]["hostname"],
            "jump-prod-02"
        );
        let lines = self.shared.ledger();
        let yes: Vec<&Value> = lines.iter().filter(|l| l["answer"] == "yes").collect();
        assert_eq!(yes.len(), 1, "{lines:#?}");
        let line = last_line_of(&lines, ASKED);
        assert_eq!(line["by"], "person", "{line}");
        assert_eq!(line["caller"], "usr-sam@larkfield", "{line}");
        self.shared.assert_ledger_verifies();
    }

    /// The page's client signed in at the issuer: an authorization for the gateway's
    /// resource, and a code exchanged by that client.
    fn assert_the_page_signed_in(&self) {
        let (id, _) = PAGE_CLIENT;
        let asked: Vec<Value> = events(&self.issuer, "authorize")
            .into_iter()
            .filter(|e| e["client_id"] == id)
            .collect();
        assert!(!asked.is_empty(), "{:?}", self.issuer.lines());
        for a in &asked {
            assert_eq!(a["resource"], format!("{}/mcp", self.base), "{a}");
            assert_eq!(a["redirect_uri"], format!("{}/approve/callback", self.base));
            let scope = a["scope"].as_str().unwrap_or_default();
            assert!(scope.split(' ').any(|s| s == "mcp:write"), "{a}");
        }
        let exchanged = events(&self.issuer, "token")
            .into_iter()
            .filter(|e| e["client_id"] == id && e["grant_type"] == "authorization_code")
            .count();
        assert!(exchanged >= 1, "{:?}", self.issuer.lines());
    }

    /// No JWT (a token: `eyJ…`) is in the gateway's output, nor in its state file.
    fn assert_no_token_kept_or_shown(&self) {
        let said = self.gateway.lines().join("\n");
        assert!(
            !said.contains("eyJ"),
            "a token reached the gateway's output"
        );
        if self.shared.cluster.is_none() {
            for file in ["state.db", "state.db-wal"] {
                let bytes = std::fs::read(self.dir.path().join(file)).unwrap_or_default();
                let found = bytes.windows(3).any(|w| w == b"eyJ");
                assert!(!found, "a token is kept in {file}");
            }
        }
    }
}

/// An OAuth user's call, from a client that can take only URL questions, is approved on
/// the page by the same user, signed in at the same authorization server; another user
/// signing in there sees 404; the callback replayed signs nobody in; no token is kept.
pub fn an_oauth_user_approves_on_the_page_the_call_their_url_only_client_made(backing: Backing) {
    let w = OAuthPage::start(backing, false);
    let browser = repo_root().join("tests/oauth/browser.sh");
    let browser = browser.to_str().unwrap();
    let client = w.client(&["--oauth-browser", browser]);
    let url = match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| client.first_url())) {
        Ok(u) => u,
        Err(e) => {
            eprintln!("the gateway said: {:#?}", w.gateway.lines());
            eprintln!("the authorization server said: {:#?}", w.issuer.lines());
            std::panic::resume_unwind(e)
        }
    };
    assert_page_url(&url, &w.base);
    w.in_chromium("oauth-approve", &url);
    let out = client.output();
    assert_eq!(
        out["sign_ins"], 1,
        "the client signed in once, with OAuth: {out}"
    );
    w.assert_approved_once(&out, &url);
    w.assert_the_page_signed_in();
    w.assert_no_token_kept_or_shown();
    let said = w.gateway.lines().join("\n");
    assert!(
        said.contains(&format!(
            "approval page: {}/approve/… (signing in at {})",
            w.base, w.issuer.url
        )),
        "{said}"
    );
}

/// With the tokens file beside, the page offers both ways in; a forged, used or other
/// browser's `state`, another issuer's `iss` and the authorization server's own refusal
/// each end on a page saying so, and sign nobody in; then the person signs in at the
/// issuer and approves the call of a client that uses its bearer token.
#[test]
fn a_forged_or_replayed_state_a_wrong_iss_and_a_refusal_approve_nothing() {
    let w = OAuthPage::start(Backing::Sqlite, true);
    let bearer = crate::interop_foreign_clients::bearer();
    let client = w.client(&["--header", &bearer]);
    let url = client.first_url();
    w.in_chromium("oauth-refusals", &url);
    let out = client.output();
    w.assert_approved_once(&out, &url);
    w.assert_the_page_signed_in();
    w.assert_no_token_kept_or_shown();
    let refused: Vec<Value> = events(&w.issuer, "token_error");
    assert!(
        refused.is_empty(),
        "no made-up code reached the token endpoint: {refused:?}"
    );
}

/// Variables of a command's environment.
type Env<'a> = &'a [(&'a str, &'a str)];

/// The page's sign-in flags are checked when read, before anything is served: under
/// `--oauth-issuer` the page needs its client there; a client id needs the issuer; the
/// secret comes one way (never printed); and an issuer that does not advertise PKCE with
/// S256 signs nobody in, so the gateway does not start.
#[tokio::test(flavor = "multi_thread")]
async fn the_pages_sign_in_flags_are_checked_when_read() {
    let issuer = authorization_server(&[]);
    let dir = tempfile::tempdir().unwrap();
    let config = gateway_config(dir.path());
    let tokens = tokens_file(dir.path());
    let tokens = tokens.to_str().unwrap();
    let (id, secret) = PAGE_CLIENT;
    let secret_file = dir.path().join("page-secret");
    std::fs::write(&secret_file, format!("{secret}\n")).unwrap();
    let secret_file = secret_file.to_str().unwrap();
    let missing = dir.path().join("no-such-secret");
    let base = "http://127.0.0.1:8700";
    let oauth = ["--oauth-issuer", &issuer.url, "--approval-page", base];
    let with_id = [&oauth[..], &["--approval-page-client-id", id]].concat();
    let cases: [(Vec<&str>, Env, &str); 4] = [
        (oauth.to_vec(), &[], "--approval-page-client-id"),
        (
            vec![
                "--tokens",
                tokens,
                "--approval-page",
                base,
                "--approval-page-client-id",
                id,
            ],
            &[],
            "--oauth-issuer <URL>",
        ),
        (
            [
                &with_id[..],
                &["--approval-page-client-secret-file", secret_file],
            ]
            .concat(),
            &[(SECRET_ENV, secret)],
            "given twice",
        ),
        (
            [
                &with_id[..],
                &[
                    "--approval-page-client-secret-file",
                    missing.to_str().unwrap(),
                ],
            ]
            .concat(),
            &[],
            "--approval-page-client-secret-file",
        ),
    ];
    let state = dir.path().join("state.db");
    for (flags, env, says) in cases {
        let mut args = http_args(&config, "127.0.0.1:0", state.to_str().unwrap());
        args.extend_from_slice(&flags);
        let ran = crate::common::run(&args, env);
        assert_ne!(ran.status, 0, "{flags:?}");
        assert!(ran.stderr.contains(says), "{flags:?}: {}", ran.stderr);
        assert!(!ran.stderr.contains(secret), "the secret was printed");
    }

    // The issuer stops advertising S256: the page could not sign anyone in safely.
    let broken = reqwest::Client::new()
        .post(format!("{}/__test/break?metadata=no-s256", issuer.url))
        .send()
        .await
        .expect("the authorization server answers");
    assert!(broken.status().is_success());
    let mut args = http_args(&config, "127.0.0.1:0", state.to_str().unwrap());
    args.extend_from_slice(&with_id);
    let ran = crate::common::run(&args, &[(SECRET_ENV, secret)]);
    assert_ne!(ran.status, 0, "{}", ran.stderr);
    assert!(
        ran.stderr.contains("does not advertise PKCE with S256"),
        "{}",
        ran.stderr
    );
    assert!(!ran.stderr.contains(secret), "the secret was printed");
}
