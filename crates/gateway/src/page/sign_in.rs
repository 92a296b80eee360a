//! The approval page's OAuth sign-ins in flight (`--approval-page` with
//! `--oauth-issuer`): one begins when a browser without a session opens a confirmation's
//! page and ends when the authorization server sends it back to
//! `{base}/approve/callback`. Each is a row of the shared store (so the browser may come
//! back to any replica), kept by the digest of its `state` and of a cookie that binds it
//! to the browser, for [`SIGN_IN_TTL`], taken once: a `state` forged, replayed, expired,
//! or brought back by another browser finds nothing, signs nobody in, and takes nothing
//! from the browser it is for. At most [`MAX_SIGN_INS_PER_CALLER`] per confirmation's
//! caller (the oldest make room) and [`MAX_SIGN_INS`] in all (past that a new one is
//! refused).
//!
//! The `state` begins with the confirmation's id (where the browser goes back to); the
//! PKCE verifier and the nonce are derived from the browser's cookie and the `state`, not
//! kept: the store holds nothing that would redeem a code taken on its way back.

use std::time::Duration;

use super::{APPROVE_PATH, ID_BYTES, Page, is_id, now};
use crate::store::{PageSignInRow, StoreError};
use gatehouse::{
    connect::auth::redirect::{Callback, CallbackError},
    digest::sha256_hex,
    trace::random_hex,
};

pub use super::issuer::{Issuer, PageClient, Secret, Tokens};

/// How long a sign-in may stay at the authorization server.
pub const SIGN_IN_TTL: Duration = Duration::from_secs(10 * 60);
/// The most sign-ins in flight at one caller's confirmations (the oldest make room).
pub const MAX_SIGN_INS_PER_CALLER: usize = 8;
/// The most sign-ins in flight in all (past that, new ones are refused until some end).
pub const MAX_SIGN_INS: usize = 1024;
/// The last segment of the address the authorization server sends the browser back to:
/// `{base}/approve/callback`.
pub const CALLBACK: &str = "callback";

/// Why a sign-in signed nobody in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SignInFailure {
    /// The browser came back without its sign-in cookie: it began elsewhere, or too long
    /// ago.
    NoBrowser,
    /// No sign-in in flight has this `state` for this browser: made up, another
    /// browser's, finished already, or expired.
    UnknownState,
    /// The answer is not acceptable: no code, or its `iss` missing or another's.
    Answer(CallbackError),
    /// The authorization server refused, in its words.
    Refused(String),
    /// The code was not exchanged for usable tokens, in words.
    Exchange(String),
    /// [`MAX_SIGN_INS`] are in flight already.
    Busy,
    /// The store did not answer (said in the log, not on the page).
    Store(StoreError),
}

impl SignInFailure {
    /// What the person is told.
    pub fn words(&self) -> String {
        match self {
            SignInFailure::NoBrowser => "This browser did not begin this sign-in here, or began \
                it too long ago."
                .into(),
            SignInFailure::UnknownState => "This sign-in is not one the gateway began in this \
                browser, or it was finished or expired already: its state is used once."
                .into(),
            SignInFailure::Answer(e) => format!("The answer was not used: {e}."),
            SignInFailure::Refused(words) => {
                format!("The authorization server refused the sign-in: {words}.")
            }
            SignInFailure::Exchange(words) => {
                format!("The authorization server gave no usable tokens: {words}.")
            }
            SignInFailure::Busy => format!(
                "{MAX_SIGN_INS} sign-ins are under way already; try again in a few minutes."
            ),
            SignInFailure::Store(_) => "The gateway's state store did not answer.".into(),
        }
    }
}

/// A sign-in begun: where to send the browser, and the cookie that binds it there.
#[derive(Debug)]
pub struct Begun {
    /// The authorization server's address, with this sign-in's request.
    pub location: String,
    /// The browser's sign-in cookie (the one it brought, or a new one).
    pub browser: String,
}

/// A sign-in back from the authorization server with tokens.
#[derive(Debug)]
pub struct Returned {
    /// The confirmation it began at.
    pub confirmation: String,
    /// What the code was exchanged for (handed on once, never kept).
    pub tokens: Tokens,
    /// The nonce its ID token must carry, when one was asked for.
    pub nonce: Option<String>,
}

/// A value of this sign-in's derived from the browser's cookie and its `state`.
fn derived(purpose: &str, browser: &str, state: &str) -> String {
    sha256_hex(format!("gatehouse approval page {purpose}\n{browser}\n{state}").as_bytes())
}

/// Is `cookie` shaped as a browser's sign-in cookie?
fn is_browser(cookie: &str) -> bool {
    cookie.len() == ID_BYTES * 4 && cookie.bytes().all(|b| b.is_ascii_hexdigit())
}

impl Page {
    /// Where the authorization server sends the browser back to.
    pub fn callback_url(&self) -> String {
        format!("{}{APPROVE_PATH}/{CALLBACK}", self.settings.base)
    }

    /// Begin a sign-in at `issuer` from confirmation `id`'s page, in the browser whose
    /// sign-in cookie is `browser` (if it has one). An id that names no confirmation
    /// begins one all the same: the page tells them apart to nobody.
    pub async fn begin_sign_in(
        &self,
        issuer: &Issuer,
        id: &str,
        browser: Option<&str>,
    ) -> Result<Begun, SignInFailure> {
        if !is_id(id) {
            return Err(SignInFailure::UnknownState);
        }
        let browser = match browser.filter(|b| is_browser(b)) {
            Some(b) => b.to_owned(),
            None => random_hex(ID_BYTES * 2),
        };
        let state = format!("{id}{}", random_hex(ID_BYTES));
        let caller = self
            .store
            .page_row(id, now())
            .await
            .map_err(SignInFailure::Store)?
            .map(|row| row.caller);
        let row = PageSignInRow {
            id: derived("sign-in", &browser, &state),
            caller,
            created_at: std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_micros() as i64),
            expires_at: now() + SIGN_IN_TTL.as_secs() as i64,
        };
        let bounds = (MAX_SIGN_INS_PER_CALLER, MAX_SIGN_INS);
        if !self
            .store
            .sign_in_open(row, now(), bounds)
            .await
            .map_err(SignInFailure::Store)?
        {
            return Err(SignInFailure::Busy);
        }
        let verifier = derived("pkce", &browser, &state);
        let nonce = derived("nonce", &browser, &state);
        Ok(Begun {
            location: issuer.authorization_url(&state, &verifier, &nonce),
            browser,
        })
    }

    /// Finish a sign-in: the browser (its sign-in cookie `browser`) came back with
    /// `query`. Its `state`, in this browser, is taken once; the answer's `iss` and error
    /// are read; the code is exchanged.
    pub async fn finish_sign_in(
        &self,
        issuer: &Issuer,
        browser: Option<&str>,
        query: &str,
    ) -> Result<Returned, SignInFailure> {
        let Some(browser) = browser.filter(|b| is_browser(b)) else {
            return Err(SignInFailure::NoBrowser);
        };
        let state = form_urlencoded::parse(query.as_bytes())
            .find(|(k, _)| k == "state")
            .map(|(_, v)| v.into_owned())
            // The confirmation's id first (hex: the slice below is on a char boundary).
            .filter(|s| s.len() == ID_BYTES * 4 && s.get(..ID_BYTES * 2).is_some_and(is_id))
            .ok_or(SignInFailure::UnknownState)?;
        let key = derived("sign-in", browser, &state);
        if self
            .store
            .sign_in_take(&key, now())
            .await
            .map_err(SignInFailure::Store)?
            .is_none()
        {
            return Err(SignInFailure::UnknownState);
        }
        let code = match issuer.read(query, &state).map_err(SignInFailure::Answer)? {
            Callback::Code { code, .. } => code,
            Callback::Refused(words) => return Err(SignInFailure::Refused(words)),
        };
        let tokens = issuer
            .exchange(&code, &derived("pkce", browser, &state))
            .await
            .map_err(SignInFailure::Exchange)?;
        Ok(Returned {
            confirmation: state[..ID_BYTES * 2].to_owned(),
            tokens,
            nonce: issuer.openid().then(|| derived("nonce", browser, &state)),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::caller::who;
    use crate::{
        PageSettings,
        store::{Location, Store},
    };
    use serde_json::json;

    const ISS: &str = "http://127.0.0.1:9";

    /// The page's client at an issuer whose token endpoint nobody answers.
    fn issuer() -> Issuer {
        let metadata = super::super::issuer::tests::metadata_of(ISS);
        let client = PageClient {
            id: "gw-page".into(),
            secret: Some(Secret::new("s")),
        };
        let target = ("http://127.0.0.1:8700/mcp", &["mcp:read", "mcp:write"][..]);
        Issuer::new(
            client,
            ISS,
            &metadata,
            "http://127.0.0.1:8700/approve/callback",
            target,
        )
        .unwrap()
    }

    async fn page(dir: &std::path::Path) -> Page {
        let store = Store::open(&Location::File(dir.join("s.db")), None)
            .await
            .unwrap();
        Page::new(
            PageSettings::parse("http://127.0.0.1:8700", None).unwrap(),
            store,
        )
    }

    /// The `state` of a begun sign-in's address.
    fn state_of(begun: &Begun) -> String {
        gatehouse::connect::auth::redirect::state_of(&begun.location).unwrap()
    }

    fn answer(state: &str) -> String {
        format!("code=c&state={state}&iss=http%3A%2F%2F127.0.0.1%3A9")
    }

    /// A confirmation's id, as the page's URL names it.
    const ID: &str = "0123456789abcdef0123456789abcdef";

    /// The browser `browser` came back with `query`: why nobody was signed in.
    async fn refused(page: &Page, browser: Option<&str>, query: &str) -> SignInFailure {
        page.finish_sign_in(&issuer(), browser, query)
            .await
            .unwrap_err()
    }

    #[tokio::test]
    async fn a_state_is_taken_once_and_only_by_the_browser_it_began_in() {
        let dir = tempfile::tempdir().unwrap();
        let page = page(dir.path()).await;
        let begun = page.begin_sign_in(&issuer(), ID, None).await.unwrap();
        assert_eq!(
            page.callback_url(),
            "http://127.0.0.1:8700/approve/callback"
        );
        assert!(is_browser(&begun.browser));
        let state = state_of(&begun);
        assert!(state.starts_with(ID), "{state}");
        let url = reqwest::Url::parse(&begun.location).unwrap();
        let challenge = url.query_pairs().find(|(k, _)| k == "code_challenge");
        assert_eq!(challenge.unwrap().1.len(), 43, "S256 of a derived verifier");
        assert!(
            !begun.location.contains(&begun.browser),
            "the cookie stays in the browser"
        );
        // Without the cookie, or with another browser's, nobody is signed in, and the
        // sign-in is left to its own browser.
        let back = answer(&state);
        assert_eq!(refused(&page, None, &back).await, SignInFailure::NoBrowser);
        let other = random_hex(ID_BYTES * 2);
        assert_eq!(
            refused(&page, Some(&other), &back).await,
            SignInFailure::UnknownState
        );
        // Its own browser: the state is found (the code then goes to an exchange nobody
        // answers), and taken: coming back again finds it used.
        let own = Some(begun.browser.as_str());
        let exchanged = refused(&page, own, &back).await;
        assert!(
            matches!(exchanged, SignInFailure::Exchange(_)),
            "{exchanged:?}"
        );
        assert_eq!(
            refused(&page, own, &back).await,
            SignInFailure::UnknownState
        );
        // A state made up (of this confirmation's or not, or cut inside a character), or
        // none.
        let made_up = [
            format!("{ID}{}", random_hex(ID_BYTES)),
            random_hex(ID_BYTES * 2),
            format!("a{}{}", "é".repeat(ID_BYTES), "0".repeat(ID_BYTES * 2 - 1)),
            "x".into(),
        ];
        for made_up in made_up {
            let query = form_urlencoded::Serializer::new(String::new())
                .append_pair("code", "c")
                .append_pair("state", &made_up)
                .finish();
            let failed = refused(&page, own, &query).await;
            assert_eq!(failed, SignInFailure::UnknownState, "{made_up}");
        }
        assert_eq!(
            refused(&page, own, "code=c").await,
            SignInFailure::UnknownState
        );
    }

    #[tokio::test]
    async fn a_wrong_iss_or_the_issuers_refusal_signs_nobody_in() {
        let dir = tempfile::tempdir().unwrap();
        let (page, issuer) = (page(dir.path()).await, issuer());
        let begun = page.begin_sign_in(&issuer, ID, None).await.unwrap();
        // The same browser begins again: its cookie is kept.
        let own = Some(begun.browser.as_str());
        let again = page.begin_sign_in(&issuer, ID, own).await.unwrap();
        assert_eq!(again.browser, begun.browser);
        // A wrong iss is refused before the code is used, and the state is gone after.
        let state = state_of(&again);
        let forged = format!("code=c&state={state}&iss=http%3A%2F%2Fevil.example");
        assert_eq!(
            refused(&page, own, &forged).await,
            SignInFailure::Answer(CallbackError::WrongIssuer(ISS.into()))
        );
        assert_eq!(
            refused(&page, own, &answer(&state)).await,
            SignInFailure::UnknownState
        );
        // The authorization server's refusal, in its words.
        let state = state_of(&begun);
        let query = format!("error=access_denied&state={state}&iss=http%3A%2F%2F127.0.0.1%3A9");
        assert_eq!(
            refused(&page, own, &query).await,
            SignInFailure::Refused("access_denied".into())
        );
        // An id that is no confirmation's shape begins nothing.
        assert!(page.begin_sign_in(&issuer, "../x", None).await.is_err());
    }

    #[tokio::test]
    async fn sign_ins_are_bounded_per_caller_and_in_all() {
        let dir = tempfile::tempdir().unwrap();
        let (page, issuer) = (page(dir.path()).await, issuer());
        let request =
            gatehouse::person::ApprovalRequest::new("cmdb", "cmdb__get_asset", json!({}), "ask");
        let sams = page.open(&who("sam@larkfield"), &request).await.unwrap();
        let first = page.begin_sign_in(&issuer, &sams, None).await.unwrap();
        let mut last = None;
        for _ in 0..MAX_SIGN_INS_PER_CALLER {
            last = Some(page.begin_sign_in(&issuer, &sams, None).await.unwrap());
        }
        let finish = |begun: Begun| {
            let (page, issuer) = (&page, &issuer);
            async move {
                let query = answer(&state_of(&begun));
                page.finish_sign_in(issuer, Some(&begun.browser), &query)
                    .await
                    .unwrap_err()
            }
        };
        assert_eq!(
            finish(first).await,
            SignInFailure::UnknownState,
            "the oldest made room"
        );
        // Ids that name no confirmation share a bucket of their own: filling it takes
        // nothing from Sam's (whose last one still reaches the exchange).
        let unknown = "ffffffffffffffffffffffffffffffff";
        for _ in 0..=MAX_SIGN_INS_PER_CALLER {
            page.begin_sign_in(&issuer, unknown, None).await.unwrap();
        }
        let sams_last = finish(last.unwrap()).await;
        assert!(
            matches!(sams_last, SignInFailure::Exchange(_)),
            "{sams_last:?}"
        );
        // In all: new ones are refused once MAX_SIGN_INS are in flight.
        let mut in_flight = 2 * MAX_SIGN_INS_PER_CALLER - 1;
        for n in 0.. {
            let id = page
                .open(&who(&format!("u{n}@larkfield")), &request)
                .await
                .unwrap();
            for _ in 0..MAX_SIGN_INS_PER_CALLER {
                match page.begin_sign_in(&issuer, &id, None).await {
                    Ok(_) => in_flight += 1,
                    Err(busy) => {
                        assert_eq!(busy, SignInFailure::Busy);
                        assert!(busy.words().contains("under way"));
                        assert_eq!(in_flight, MAX_SIGN_INS);
                        return;
                    }
                }
            }
        }
    }
}
