//! The store's own tests: sign-ins keyed by server URL and issuer, registrations by
//! issuer, the document replaced whole, the write lock and the refresh lock, and what a
//! slot refuses or drops. The secrets are in the file (`credentialStore: "file"`).

use std::{sync::mpsc, thread};

use rmcp::transport::auth::{
    AuthorizationMetadata, CredentialStore as _, OAuthTokenResponse, StoredCredentials,
};
use serde_json::json;

use super::*;
use crate::config::CredentialStore as Choice;

const R1: &str = "http://127.0.0.1:1/mcp";
const R2: &str = "http://127.0.0.1:2/mcp";
const I1: &str = "http://127.0.0.1:10";
const I2: &str = "http://127.0.0.1:20";

/// A store in a folder of its own; the folder is removed with the guard.
fn store() -> (tempfile::TempDir, Store) {
    let dir = tempfile::tempdir().unwrap();
    let store = another(&dir);
    (dir, store)
}

/// Another store over the same folder, as another process has.
fn another(dir: &tempfile::TempDir) -> Store {
    Store::new(dir.path().join("oauth"), Vault::new(Choice::File))
}

fn tokens(access: &str, refresh: Option<&str>, token_type: &str) -> OAuthTokenResponse {
    let mut t = json!({"access_token": access, "token_type": token_type, "expires_in": 60});
    if let Some(r) = refresh {
        t["refresh_token"] = json!(r);
    }
    serde_json::from_value(t).expect("a token response")
}

fn credentials(tokens: OAuthTokenResponse, at: u64) -> StoredCredentials {
    StoredCredentials::new(
        "client".into(),
        Some(tokens),
        vec!["mcp:read".into()],
        Some(at),
    )
}

fn record(resource: &str, issuer: &str) -> SignIn {
    SignIn {
        resource: resource.into(),
        issuer: issuer.into(),
        server: "support".into(),
        metadata: serde_json::from_value::<AuthorizationMetadata>(json!({
            "authorization_endpoint": format!("{issuer}/auth"),
            "token_endpoint": format!("{issuer}/token"),
            "issuer": issuer,
        }))
        .unwrap(),
        client_id: "client".into(),
        client_source: ClientSource::Registered,
        redirect_uri: "http://127.0.0.1:3/callback".into(),
        scopes: Vec::new(),
        tokens_at: None,
        expires_in: None,
        refreshable: false,
        in_keychain: false,
        dpop: None,
    }
}

fn registration(id: &str) -> (Registration, Option<String>) {
    let reg = Registration {
        client_id: id.into(),
        redirect_uri: "http://127.0.0.1:3/callback".into(),
        registered_at: 1,
        has_secret: true,
        in_keychain: false,
    };
    (reg, Some(format!("secret of {id}")))
}

/// A first sign-in of `resource` at `issuer`, its registration made now, saved.
async fn signed_in(store: &Store, resource: &str, issuer: &str, access: &str, at: u64) -> Slot {
    let slot = store.slot(resource, issuer);
    let client = format!("client at {issuer}");
    slot.prepare(record(resource, issuer), Some(registration(&client)));
    slot.save(credentials(tokens(access, Some("rt"), "Bearer"), at))
        .await
        .expect("saved");
    slot
}

fn access_of(found: Option<StoredCredentials>) -> Option<String> {
    found
        .and_then(|c| c.token_response)
        .map(|t| t.access_token().secret().clone())
}

#[tokio::test]
async fn sign_ins_are_kept_per_server_url_and_issuer_and_registrations_per_issuer() {
    let (_dir, store) = store();
    let a = signed_in(&store, R1, I1, "a", 100).await;
    let b = signed_in(&store, R1, I2, "b", 200).await;
    let c = signed_in(&store, R2, I1, "c", 300).await;
    for (slot, access, issuer) in [(&a, "a", I1), (&b, "b", I2), (&c, "c", I1)] {
        let found = slot.load().await.unwrap();
        assert_eq!(
            found.as_ref().and_then(|f| f.issuer.as_deref()),
            Some(issuer)
        );
        assert_eq!(access_of(found).as_deref(), Some(access));
    }
    for issuer in [I1, I2] {
        let (reg, secret) = store.registration(issuer).unwrap().expect("registered");
        assert_eq!(reg.client_id, format!("client at {issuer}"));
        assert_eq!(secret, Some(format!("secret of client at {issuer}")));
    }
    // The most recent of R1's two sign-ins is its current one.
    assert_eq!(store.current(R1).unwrap().unwrap().issuer, I2);

    let removed = store.remove(R1).unwrap();
    let mut issuers: Vec<&str> = removed.iter().map(|(s, _)| s.issuer.as_str()).collect();
    issuers.sort();
    assert_eq!(issuers, [I1, I2]);
    assert!(
        removed.iter().all(|(_, t)| t.is_some()),
        "with their tokens"
    );
    assert!(store.current(R1).unwrap().is_none());
    assert_eq!(access_of(c.load().await.unwrap()).as_deref(), Some("c"));
    assert!(
        store.registration(I1).unwrap().is_some(),
        "registrations stay"
    );
}

#[tokio::test]
async fn the_document_is_replaced_whole_private_and_never_half_written() {
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    let (dir, store) = store();
    let slot = signed_in(&store, R1, I1, "a", 1).await;
    let inode = std::fs::metadata(store.path()).unwrap().ino();
    slot.save(credentials(tokens("a2", Some("rt2"), "Bearer"), 2))
        .await
        .unwrap();
    let meta = std::fs::metadata(store.path()).unwrap();
    assert_ne!(meta.ino(), inode, "a new file renamed over the old one");
    assert_eq!(meta.permissions().mode() & 0o777, 0o600);
    let folder = std::fs::metadata(dir.path().join("oauth")).unwrap();
    assert_eq!(folder.permissions().mode() & 0o777, 0o700);
    let names: Vec<String> = std::fs::read_dir(dir.path().join("oauth"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert!(
        names.iter().all(|n| !n.starts_with(".credentials")),
        "no temporary file left: {names:?}"
    );

    // A damaged document is refused in words, and left as it is.
    std::fs::write(store.path(), b"{\"version\": 1, \"sign_ins\": [").unwrap();
    let e = store.forget_registration(I1).unwrap_err();
    assert!(e.to_string().contains("it is damaged"), "{e}");
    assert_eq!(
        std::fs::read(store.path()).unwrap(),
        b"{\"version\": 1, \"sign_ins\": ["
    );
    let e = slot.load().await.unwrap_err();
    assert!(e.to_string().contains("move it away"), "{e}");
}

#[test]
fn changes_made_at_once_by_many_stores_are_all_kept() {
    let dir = tempfile::tempdir().unwrap();
    thread::scope(|s| {
        for i in 0..8 {
            let store = another(&dir);
            s.spawn(move || {
                let rt = tokio::runtime::Builder::new_current_thread()
                    .build()
                    .unwrap();
                let resource = format!("http://127.0.0.1:{}/mcp", 100 + i);
                rt.block_on(signed_in(&store, &resource, I1, &format!("t{i}"), i));
            });
        }
    });
    let sign_ins = another(&dir).sign_ins().unwrap();
    assert_eq!(sign_ins.len(), 8, "no change lost another");
}

#[test]
fn the_write_lock_waits_for_its_holder() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("x.lock");
    let held = lock(&path).unwrap();
    let (tx, rx) = mpsc::channel();
    let waiting = {
        let path = path.clone();
        thread::spawn(move || tx.send(lock(&path).map(|_| ())).unwrap())
    };
    assert!(
        rx.recv_timeout(Duration::from_millis(300)).is_err(),
        "the second waits while the first holds it"
    );
    drop(held);
    let got = rx.recv_timeout(LOCK_WAIT).expect("the second gets it");
    assert!(got.is_ok());
    waiting.join().unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn refreshes_of_one_sign_in_take_turns_across_stores() {
    let (dir, store) = store();
    let slot = signed_in(&store, R1, I1, "a", 1).await;
    let first = slot.acquire_refresh_guard().await.unwrap();
    let other = another(&dir).slot(R1, I1);
    let mut second = tokio::spawn(async move { other.acquire_refresh_guard().await.map(|_| ()) });
    assert!(
        tokio::time::timeout(Duration::from_millis(300), &mut second)
            .await
            .is_err(),
        "the second refresh waits for the first"
    );
    drop(first);
    second.await.unwrap().expect("then it goes ahead");
    // Another sign-in's refresh does not wait.
    let _held = slot.acquire_refresh_guard().await.unwrap();
    let unrelated = store.slot(R2, I1);
    tokio::time::timeout(Duration::from_secs(5), unrelated.acquire_refresh_guard())
        .await
        .expect("not held up")
        .unwrap();
}

#[tokio::test]
async fn tokens_that_are_not_a_bearer_token_are_refused_and_nothing_is_stored() {
    for (access, token_type, words) in [
        ("a", "mac", "not Bearer"),
        (" ", "Bearer", "empty access_token"),
    ] {
        let (_dir, store) = store();
        let slot = store.slot(R1, I1);
        slot.prepare(record(R1, I1), Some(registration("c")));
        let e = slot
            .save(credentials(tokens(access, Some("rt"), token_type), 1))
            .await
            .unwrap_err();
        assert!(e.to_string().contains(words), "{e}");
        assert!(
            !store.path().exists(),
            "nothing stored, not even the registration"
        );
    }
}

#[tokio::test]
async fn tokens_are_not_saved_for_a_sign_in_that_was_not_begun() {
    let (_dir, store) = store();
    let e = store
        .slot(R1, I1)
        .save(credentials(tokens("a", None, "Bearer"), 1))
        .await
        .unwrap_err();
    assert!(e.to_string().contains("no sign-in"), "{e}");
    assert!(store.sign_ins().unwrap().is_empty());
}

#[tokio::test]
async fn a_refused_refresh_token_drops_the_tokens_unless_another_process_rotated_them() {
    let (dir, store) = store();
    let slot = signed_in(&store, R1, I1, "a", 1).await;
    let old = slot.load().await.unwrap().unwrap();

    // Another process rotated the tokens meanwhile: the refusal of the old one drops nothing.
    let other = another(&dir).slot(R1, I1);
    other
        .save(credentials(tokens("a2", Some("rt2"), "Bearer"), 2))
        .await
        .unwrap();
    slot.on_refresh_token_rejected(&old).await.unwrap();
    let now = slot.load().await.unwrap();
    assert_eq!(
        access_of(now.clone()).as_deref(),
        Some("a2"),
        "a load sees the other's save"
    );

    // The kept refresh token refused: the tokens go, the record and registration stay.
    slot.on_refresh_token_rejected(&now.unwrap()).await.unwrap();
    assert!(slot.load().await.unwrap().is_none());
    let kept = &store.sign_ins().unwrap()[0];
    assert_eq!((kept.tokens_at, kept.refreshable), (None, false));
    assert!(store.current(R1).unwrap().is_none());
    assert!(store.registration(I1).unwrap().is_some());
    let doc: serde_json::Value =
        serde_json::from_slice(&std::fs::read(store.path()).unwrap()).unwrap();
    let secrets: Vec<&String> = doc["secrets"].as_object().unwrap().keys().collect();
    assert_eq!(
        secrets,
        [&format!("client {I1}")],
        "only the client's secret"
    );
}

#[tokio::test]
async fn a_dpop_key_is_kept_beside_its_tokens_through_refreshes_and_goes_with_them() {
    use crate::connect::auth::dpop::DpopKey;
    let (_dir, store) = store();
    let key = DpopKey::generate().unwrap();
    let slot = store.slot(R1, I1);
    slot.prepare(record(R1, I1), None);
    slot.bind_dpop(key.to_kept(), key.thumbprint().into());
    slot.save(credentials(tokens("bound", Some("rt"), "DPoP"), 1))
        .await
        .unwrap();
    let kept = store
        .dpop_key(R1, I1)
        .unwrap()
        .expect("kept with the tokens");
    assert_eq!(
        DpopKey::from_kept(&kept).unwrap().thumbprint(),
        key.thumbprint()
    );
    assert_eq!(
        store.current(R1).unwrap().unwrap().dpop.as_deref(),
        Some(key.thumbprint())
    );
    // A refresh (no record prepared) keeps the key; a bearer token for it is refused.
    let refreshed = store.slot(R1, I1);
    refreshed
        .save(credentials(tokens("bound-2", Some("rt2"), "DPoP"), 2))
        .await
        .unwrap();
    assert_eq!(
        store.dpop_key(R1, I1).unwrap().as_deref(),
        Some(kept.as_str())
    );
    let unbound = refreshed
        .save(credentials(tokens("plain", Some("rt3"), "Bearer"), 3))
        .await
        .unwrap_err();
    assert!(unbound.to_string().contains("not DPoP"), "{unbound}");
    // A new sign-in without a key drops the old key; a DPoP token without one is refused.
    let again = store.slot(R1, I1);
    again.prepare(record(R1, I1), None);
    let no_key = again
        .save(credentials(tokens("x", None, "DPoP"), 4))
        .await
        .unwrap_err();
    assert!(no_key.to_string().contains("not Bearer"), "{no_key}");
    again.prepare(record(R1, I1), None);
    again
        .save(credentials(tokens("plain", None, "Bearer"), 5))
        .await
        .unwrap();
    assert_eq!(store.dpop_key(R1, I1).unwrap(), None);
    assert!(
        !std::fs::read_to_string(store.path())
            .unwrap()
            .contains(&kept)
    );
    // Signing out removes a key with its tokens.
    let bound = store.slot(R2, I1);
    bound.prepare(record(R2, I1), None);
    bound.bind_dpop(key.to_kept(), key.thumbprint().into());
    bound
        .save(credentials(tokens("bound", None, "DPoP"), 6))
        .await
        .unwrap();
    store.remove(R2).unwrap();
    assert!(
        !std::fs::read_to_string(store.path())
            .unwrap()
            .contains(&kept)
    );
}
