//! `doctor`'s checks of the sign-ins with no person, before any server is asked: a
//! workload's token file and an identity provider's ID token (there, readable by the user
//! only, a JWT, not expired) and a client's private key (it signs with its algorithm).

use std::path::Path;

use gatehouse::{
    config::{AssertionSource, Config, Grant, Transport},
    connect::auth::{assertion_expiry, key_signs, read_assertion_file, store::now_secs},
    text::seconds,
};

use super::{Check, Verdict, check};

/// The checks of every HTTP server whose entry signs in without a person.
pub(super) fn checks(config: Option<&Config>) -> Vec<Check> {
    let mut out = Vec::new();
    let now = now_secs();
    for spec in config.map(|c| c.servers.as_slice()).unwrap_or_default() {
        let Transport::Http {
            oauth: Some(oauth), ..
        } = &spec.transport
        else {
            continue;
        };
        let name = |what: &str| format!("{} {what}", spec.name);
        match oauth.grant {
            Grant::JwtBearer => {
                if let Some(file) = &oauth.token_file {
                    out.push(token_file(&name("workload token"), file, now));
                }
            }
            Grant::EnterpriseManaged => match oauth.idp.as_ref().map(|i| &i.id_token) {
                Some(AssertionSource::File(file)) => {
                    out.push(token_file(&name("ID token"), file, now));
                }
                Some(AssertionSource::Value(jwt)) => {
                    out.push(expiry(name("ID token"), "from the environment", jwt, now));
                }
                None => {}
            },
            Grant::ClientCredentials => {
                if let Some((pem, algorithm)) = &oauth.private_key {
                    out.push(match key_signs(pem, *algorithm) {
                        Ok(()) => check(
                            "sign-in",
                            name("private key"),
                            Verdict::Ok,
                            format!("it signs with {algorithm:?}"),
                        ),
                        Err(why) => check("sign-in", name("private key"), Verdict::Broken, why)
                            .fix("put the client's PEM private key in the variable \"privateKey\" names, and name its \"signingAlgorithm\""),
                    });
                }
            }
            Grant::AuthorizationCode => {}
        }
    }
    out
}

/// A token file: readable, a JWT, private, not expired.
fn token_file(name: &str, path: &Path, now: u64) -> Check {
    let shown = path.display().to_string();
    let jwt = match read_assertion_file("token", path) {
        Ok(jwt) => jwt,
        Err(e) => {
            return check("sign-in", name, Verdict::Broken, e.to_string()).fix(format!(
                "have the platform (or the sign-in agent) write the token to {shown}, or correct the entry's path"
            ));
        }
    };
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(path).map_or(0, |m| m.permissions().mode() & 0o777);
    if mode & 0o077 != 0 {
        return check(
            "sign-in",
            name,
            Verdict::Warning,
            format!("{shown} is readable by others (mode {mode:o}): whoever reads it can sign in as this workload"),
        )
        .fix(format!("chmod 600 {shown}, or have the platform mount it so"));
    }
    expiry(name.to_owned(), &shown, &jwt, now)
}

/// A JWT's expiry: a warning once it has passed.
fn expiry(name: String, place: &str, jwt: &str, now: u64) -> Check {
    match assertion_expiry(jwt) {
        Some(at) if at <= now => check(
            "sign-in",
            name,
            Verdict::Warning,
            format!(
                "the token in {place} expired {} ago: the authorization server will refuse it",
                seconds(std::time::Duration::from_secs(now - at))
            ),
        )
        .fix(
            "the platform or sign-in agent should replace it before it expires: check that it runs",
        ),
        Some(at) => check(
            "sign-in",
            name,
            Verdict::Ok,
            format!(
                "{place} holds a JWT that expires in {}",
                seconds(std::time::Duration::from_secs(at - now))
            ),
        ),
        None => check(
            "sign-in",
            name,
            Verdict::Ok,
            format!("{place} holds a JWT (no expiry in it)"),
        ),
    }
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::PermissionsExt;

    use super::*;

    /// `{"alg":"none"}.{"sub":"w","exp":1893456000}.sig`: expires in 2030.
    const JWT: &str = "eyJhbGciOiJub25lIn0.eyJzdWIiOiJ3IiwiZXhwIjoxODkzNDU2MDAwfQ.c2ln";

    #[test]
    fn a_token_file_is_private_a_jwt_and_not_expired_or_the_verdict_says_which() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("token");
        std::fs::write(&path, JWT).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
        let before = 1_893_456_000 - 3600;
        let fine = token_file("desk workload token", &path, before);
        assert_eq!(fine.verdict, Verdict::Ok, "{fine:?}");
        assert!(fine.detail.contains("expires in 3600 s"), "{fine:?}");
        let stale = token_file("desk workload token", &path, 1_893_456_000 + 120);
        assert_eq!(stale.verdict, Verdict::Warning, "{stale:?}");
        assert!(stale.detail.contains("expired 120 s ago"), "{stale:?}");
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
        let open = token_file("desk workload token", &path, before);
        assert_eq!(open.verdict, Verdict::Warning, "{open:?}");
        assert!(open.fix.unwrap().starts_with("chmod 600"));
        let gone = token_file("desk workload token", &dir.path().join("gone"), before);
        assert_eq!(gone.verdict, Verdict::Broken, "{gone:?}");
    }
}
