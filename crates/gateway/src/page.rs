//! The approval page: for a client that takes URL-mode questions but cannot show a
//! form, the person approves a call on a page of the gateway's own, behind the same
//! sign-in as the MCP endpoint. This module keeps the page's state in the shared store
//! (pending confirmations with their decisions, sign-in sessions), so the page served by
//! one replica and the call's next round on another agree; the HTTP routes and the HTML
//! are the binary's. The client's answer to the URL question only says the person agreed
//! to open it: the decision is read from the store, never from anything the client sends.
//!
//! Under `--oauth-issuer` people sign in through the authorization server: [`issuer`]
//! (the page's client there) and [`sign_in`] (the sign-ins in flight, in the store).

pub mod issuer;
pub mod routes;
pub mod sign_in;

use std::{sync::Arc, time::Duration};

use rmcp::model::ElicitRequestParams;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{
    CONFIRMATION_TTL, Store,
    store::{PageRow, PageSessionRow, StoreError},
};
use crate::caller::CallerName;
use gatehouse::{person::ApprovalRequest, text, trace::random_hex};

/// Where the page's routes live under the base URL: `{base}/approve/{id}`.
pub const APPROVE_PATH: &str = "/approve";
/// How long a round of a 2026-07-28 call waits for the person's decision on the page,
/// after the client said the person opened it, before asking again with the same URL.
pub const PAGE_ROUND_WAIT: Duration = Duration::from_secs(20);
/// The most that round wait may be set to (`--approval-page-wait`): within the HTTP
/// layer's request time.
pub const MAX_PAGE_ROUND_WAIT: Duration = Duration::from_secs(120);
/// How many times a call is asked with the same URL before it is refused undecided:
/// below the rounds clients allow themselves (the Python SDK gives up after 10).
pub const MAX_PAGE_ROUNDS: usize = 8;
/// How often a waiting round looks for the decision in the store.
pub const PAGE_POLL: Duration = Duration::from_millis(250);
/// How long a sign-in to the page lasts.
pub const SESSION_TTL: Duration = Duration::from_secs(8 * 60 * 60);
/// The most confirmations one caller may have waiting on the page at once.
pub const MAX_PENDING_PER_CALLER: usize = 64;
/// The most sign-in sessions one caller keeps (the oldest is dropped for a new one).
pub const MAX_SESSIONS_PER_CALLER: usize = 16;
/// The random bytes of a confirmation's id, a session cookie and a CSRF token.
const ID_BYTES: usize = 16;

/// How the page is set up: `--approval-page URL` (the base URL people reach the
/// gateway's listener at) and the round wait.
#[derive(Debug, Clone)]
pub struct PageSettings {
    base: String,
    round_wait: Duration,
    secure: bool,
}

impl PageSettings {
    /// Read the base URL: `http` or `https`, a host, no user-info, query or fragment (the
    /// page's URL must carry nothing but the confirmation's id). A trailing `/` is dropped.
    pub fn parse(base: &str, round_wait: Option<Duration>) -> Result<PageSettings, String> {
        // Its user-info, if any, is never shown.
        let shown = text::visible_line(&gatehouse::redact::url(base)).into_owned();
        let bad = |why: &str| format!("--approval-page {shown}: {why}");
        let url = reqwest::Url::parse(base).map_err(|e| bad(&format!("not a URL ({e})")))?;
        if !matches!(url.scheme(), "http" | "https") {
            return Err(bad("it must be an http:// or https:// URL"));
        }
        if url.host_str().is_none_or(str::is_empty) {
            return Err(bad("it names no host"));
        }
        if !url.username().is_empty() || url.password().is_some() {
            return Err(bad("it must not hold a user or a password"));
        }
        if url.query().is_some() || url.fragment().is_some() {
            return Err(bad("it must not have a query or a fragment"));
        }
        let round_wait = round_wait.unwrap_or(PAGE_ROUND_WAIT);
        if round_wait.is_zero() || round_wait > MAX_PAGE_ROUND_WAIT {
            return Err(format!(
                "--approval-page-wait must be between 1 and {} seconds",
                MAX_PAGE_ROUND_WAIT.as_secs()
            ));
        }
        Ok(PageSettings {
            base: url.as_str().trim_end_matches('/').to_owned(),
            round_wait,
            secure: url.scheme() == "https",
        })
    }

    /// The base URL, without a trailing `/`.
    pub fn base(&self) -> &str {
        &self.base
    }
}

/// The call as the page shows it: what the form would show.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ShownCall {
    /// The server that offers the tool.
    pub server: String,
    /// The tool as called.
    pub tool: String,
    /// The exact arguments.
    pub arguments: Value,
    /// What the caller proposed, when a `beforeCall` hook rewrote it.
    pub proposed: Option<Value>,
    /// The server's annotations (hints, not checked).
    pub annotations: Value,
    /// Why the person is asked: the rule's reason.
    pub why: String,
}

impl From<&ApprovalRequest> for ShownCall {
    fn from(r: &ApprovalRequest) -> ShownCall {
        ShownCall {
            server: r.server.clone(),
            tool: r.tool.clone(),
            arguments: r.arguments.clone(),
            proposed: r.proposed.clone(),
            annotations: r.annotations.clone(),
            why: r.why.clone(),
        }
    }
}

/// Where a confirmation on the page stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
    /// The person has not decided yet.
    Undecided,
    /// The person approved the call.
    Approved,
    /// The person denied it.
    Denied,
}

impl From<Option<bool>> for Decision {
    fn from(d: Option<bool>) -> Decision {
        match d {
            None => Decision::Undecided,
            Some(true) => Decision::Approved,
            Some(false) => Decision::Denied,
        }
    }
}

/// What deciding on the page came to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decided {
    /// Recorded now.
    Now,
    /// Not recorded: decided already, expired, or not this caller's.
    Refused,
}

/// A signed-in person.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Session {
    /// Who (`user@tenant`).
    pub caller: CallerName,
    /// The token every form of this session sends back.
    pub csrf: String,
}

/// A new sign-in: the cookie's value (a secret: set once, never shown) and its session.
pub struct SignedIn {
    /// The session cookie's value.
    pub cookie: String,
    /// The session it stands for.
    pub session: Session,
}

/// The approval page's state, over the shared store. Cheap to clone.
#[derive(Clone)]
pub struct Page {
    settings: Arc<PageSettings>,
    store: Store,
}

/// Why a confirmation could not be put on the page.
#[derive(Debug)]
pub enum NotOpened {
    /// The caller has [`MAX_PENDING_PER_CALLER`] waiting already.
    Full(CallerName),
    /// The store did not take it.
    Store(StoreError),
}

impl std::fmt::Display for NotOpened {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            NotOpened::Full(caller) => write!(
                f,
                "{caller} has {MAX_PENDING_PER_CALLER} confirmations waiting on the approval page already"
            ),
            NotOpened::Store(e) => e.fmt(f),
        }
    }
}

impl Page {
    /// The page set up by `settings`, its state in `store`.
    pub fn new(settings: PageSettings, store: Store) -> Page {
        Page {
            settings: Arc::new(settings),
            store,
        }
    }

    /// Its settings.
    pub fn settings(&self) -> &PageSettings {
        &self.settings
    }

    /// How long a round waits for the decision.
    pub fn round_wait(&self) -> Duration {
        self.settings.round_wait
    }

    /// Should the cookie be marked `Secure` (the page is reached over https)?
    pub fn secure(&self) -> bool {
        self.settings.secure
    }

    /// The page of confirmation `id`.
    pub fn url(&self, id: &str) -> String {
        format!("{}{APPROVE_PATH}/{id}", self.settings.base)
    }

    /// A new confirmation of `caller`'s for `request`, waiting on the page: its id.
    pub async fn open(
        &self,
        caller: &CallerName,
        request: &ApprovalRequest,
    ) -> Result<String, NotOpened> {
        let id = random_hex(ID_BYTES);
        let call = serde_json::json!(ShownCall::from(request)).to_string();
        let row = PageRow {
            id: id.clone(),
            caller: caller.to_owned(),
            call,
            decision: None,
            expires_at: now() + CONFIRMATION_TTL.as_secs() as i64,
        };
        let store = &self.store;
        match store.page_open(row, now(), MAX_PENDING_PER_CALLER).await {
            Ok(true) => Ok(id),
            Ok(false) => Err(NotOpened::Full(caller.clone())),
            Err(e) => Err(NotOpened::Store(e)),
        }
    }

    /// The URL question for confirmation `id`. On older revisions `elicitationId` is the
    /// id (they require one); 2026-07-28 has none and correlates through `requestState`.
    pub fn question(&self, id: &str, call: &ShownCall, legacy: bool) -> ElicitRequestParams {
        let message = format!(
            "Gatehouse asks you to approve or deny a call to {tool} on {server} ({why}). \
             Open this page in your browser, sign in, and decide there; then come back here.",
            tool = text::visible_line(&call.tool),
            server = text::visible_line(&call.server),
            why = text::clip(&text::visible_line(&call.why), 200),
        );
        ElicitRequestParams::UrlElicitationParams {
            meta: None,
            message,
            url: self.url(id),
            elicitation_id: if legacy { id.to_owned() } else { String::new() },
        }
    }

    /// Confirmation `id` as `caller` may see it: `None` when there is no such one, it
    /// expired, or it is another caller's (the page tells these apart to nobody).
    pub async fn pending(
        &self,
        id: &str,
        caller: &CallerName,
    ) -> Result<Option<(ShownCall, Decision)>, StoreError> {
        if !is_id(id) {
            return Ok(None);
        }
        let Some(row) = self.store.page_row(id, now()).await? else {
            return Ok(None);
        };
        if row.caller != *caller {
            return Ok(None);
        }
        let shown = serde_json::from_str(&row.call).map_err(|e| StoreError::Unreadable {
            what: format!("confirmation {id}'s call"),
            why: e.to_string(),
        })?;
        Ok(Some((shown, row.decision.into())))
    }

    /// `caller` decides confirmation `id`, once.
    pub async fn decide(
        &self,
        id: &str,
        caller: &CallerName,
        yes: bool,
    ) -> Result<Decided, StoreError> {
        if !is_id(id) {
            return Ok(Decided::Refused);
        }
        let done = self.store.page_decide(id, caller, yes, now()).await?;
        Ok(if done { Decided::Now } else { Decided::Refused })
    }

    /// Wait up to `wait` for the person's decision on `caller`'s confirmation `id`: an
    /// expired, unknown or another's confirmation is [`Decision::Denied`].
    pub async fn wait(
        &self,
        id: &str,
        caller: &CallerName,
        wait: Duration,
    ) -> Result<Decision, StoreError> {
        let until = tokio::time::Instant::now() + wait;
        loop {
            let decision = match self.pending(id, caller).await? {
                Some((_, decision)) => decision,
                None => Decision::Denied,
            };
            if decision != Decision::Undecided || tokio::time::Instant::now() >= until {
                return Ok(decision);
            }
            tokio::time::sleep_until(until.min(tokio::time::Instant::now() + PAGE_POLL)).await;
        }
    }

    /// Sign `caller` in (their bearer token was checked by the caller of this): a new
    /// session, kept as the digest of its cookie.
    pub async fn sign_in(&self, caller: &CallerName) -> Result<SignedIn, StoreError> {
        let cookie = random_hex(ID_BYTES * 2);
        let session = Session {
            caller: caller.to_owned(),
            csrf: random_hex(ID_BYTES),
        };
        let row = PageSessionRow {
            id: gatehouse::digest::sha256_hex(cookie.as_bytes()),
            caller: session.caller.clone(),
            csrf: session.csrf.clone(),
            created_at: std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_micros() as i64),
            expires_at: now() + SESSION_TTL.as_secs() as i64,
        };
        self.store
            .session_open(row, now(), MAX_SESSIONS_PER_CALLER)
            .await?;
        Ok(SignedIn { cookie, session })
    }

    /// The session a cookie stands for, unless it expired (or never was).
    pub async fn session(&self, cookie: &str) -> Result<Option<Session>, StoreError> {
        if cookie.len() != ID_BYTES * 4 || !cookie.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Ok(None);
        }
        let id = gatehouse::digest::sha256_hex(cookie.as_bytes());
        Ok(self.store.session_row(&id, now()).await?.map(|r| Session {
            caller: r.caller,
            csrf: r.csrf,
        }))
    }
}

/// Does `sent` match the session's CSRF token? Compared in constant time.
pub fn csrf_matches(session: &Session, sent: &str) -> bool {
    let (a, b) = (session.csrf.as_bytes(), sent.as_bytes());
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// Is `id` shaped as a confirmation's id?
fn is_id(id: &str) -> bool {
    id.len() == ID_BYTES * 2 && id.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

/// Now, in seconds since the Unix epoch.
fn now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::caller::who;
    use crate::store::Location;
    use serde_json::json;

    fn request() -> ApprovalRequest {
        let arguments = json!({"hostname": "<script>x</script>"});
        ApprovalRequest::new(
            "cmdb",
            "cmdb__get_asset",
            arguments,
            "asset records are private",
        )
    }

    #[test]
    fn the_base_url_is_checked_when_read() {
        let ok = PageSettings::parse("https://gw.example/approvals/", None).unwrap();
        assert_eq!(ok.base(), "https://gw.example/approvals");
        assert!(ok.secure);
        let err = |u: &str| PageSettings::parse(u, None).unwrap_err();
        assert!(err("ftp://gw.example").contains("http"));
        assert!(err("not a url").contains("not a URL"));
        let with_password = err("https://sam:hunter2@gw.example");
        assert!(with_password.contains("user"), "{with_password}");
        assert!(!with_password.contains("hunter2"), "{with_password}");
        assert!(err("https://gw.example/?a=1").contains("query"));
        assert!(err("https://gw.example/#x").contains("fragment"));
        let wait = |s| PageSettings::parse("http://127.0.0.1:1", Some(Duration::from_secs(s)));
        assert!(wait(0).is_err());
        assert!(wait(121).is_err());
        assert!(wait(3).is_ok());
    }

    #[tokio::test]
    async fn a_confirmation_is_its_callers_and_decided_once() {
        let dir = tempfile::tempdir().unwrap();
        let location = Location::File(dir.path().join("state.db"));
        let store = Store::open(&location, None).await.unwrap();
        let settings = PageSettings::parse("http://127.0.0.1:8700", None).unwrap();
        let page = Page::new(settings, store.clone());
        let id = page.open(&who("sam@larkfield"), &request()).await.unwrap();
        assert!(page.url(&id).ends_with(&format!("/approve/{id}")));
        assert!(
            !page.url(&id).contains("jump"),
            "no call details in the URL"
        );
        assert!(
            page.pending(&id, &who("kim@larkfield"))
                .await
                .unwrap()
                .is_none()
        );
        let (shown, decision) = page
            .pending(&id, &who("sam@larkfield"))
            .await
            .unwrap()
            .unwrap();
        assert_eq!(shown.tool, "cmdb__get_asset");
        assert_eq!(decision, Decision::Undecided);
        assert_eq!(
            page.decide(&id, &who("kim@larkfield"), true).await.unwrap(),
            Decided::Refused
        );
        let wait = Duration::from_millis(300);
        assert_eq!(
            page.wait(&id, &who("sam@larkfield"), wait).await.unwrap(),
            Decision::Undecided
        );
        assert_eq!(
            page.decide(&id, &who("sam@larkfield"), false)
                .await
                .unwrap(),
            Decided::Now
        );
        assert_eq!(
            page.decide(&id, &who("sam@larkfield"), true).await.unwrap(),
            Decided::Refused
        );
        // Another opener of the same store (another replica) sees the same decision.
        let other = Page::new(
            PageSettings::parse("http://127.0.0.1:8701", None).unwrap(),
            Store::open(&location, None).await.unwrap(),
        );
        assert_eq!(
            other.wait(&id, &who("sam@larkfield"), wait).await.unwrap(),
            Decision::Denied
        );
        assert!(
            page.pending("../etc", &who("sam@larkfield"))
                .await
                .unwrap()
                .is_none()
        );
    }

    /// A page whose state is a store file in `dir`.
    async fn page_in(dir: &std::path::Path) -> Page {
        let store = Store::open(&Location::File(dir.join("s.db")), None)
            .await
            .unwrap();
        Page::new(PageSettings::parse("http://h:1", None).unwrap(), store)
    }

    #[tokio::test]
    async fn sessions_are_kept_by_digest_and_bounded_per_caller() {
        let dir = tempfile::tempdir().unwrap();
        let page = page_in(dir.path()).await;
        let first = page.sign_in(&who("sam@larkfield")).await.unwrap();
        let found = page.session(&first.cookie).await.unwrap().unwrap();
        assert_eq!(found, first.session);
        assert!(csrf_matches(&found, &first.session.csrf));
        assert!(!csrf_matches(&found, ""));
        assert!(
            page.session("0".repeat(64).as_str())
                .await
                .unwrap()
                .is_none()
        );
        for _ in 0..MAX_SESSIONS_PER_CALLER {
            page.sign_in(&who("sam@larkfield")).await.unwrap();
        }
        assert!(
            page.session(&first.cookie).await.unwrap().is_none(),
            "the oldest session made room"
        );
    }

    #[tokio::test]
    async fn a_caller_has_a_bounded_number_waiting() {
        let dir = tempfile::tempdir().unwrap();
        let page = page_in(dir.path()).await;
        for _ in 0..MAX_PENDING_PER_CALLER {
            page.open(&who("sam@larkfield"), &request()).await.unwrap();
        }
        let err = page
            .open(&who("sam@larkfield"), &request())
            .await
            .unwrap_err();
        assert!(matches!(&err, NotOpened::Full(c) if *c == who("sam@larkfield")));
        assert!(err.to_string().contains("waiting"), "{err}");
        assert!(page.open(&who("kim@larkfield"), &request()).await.is_ok());
    }
}
