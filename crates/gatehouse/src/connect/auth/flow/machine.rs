//! The client-credentials grant, for a machine with no person (a CI job, a service): the
//! configured client's own credentials, a secret or a private key that signs its
//! assertion (RFC 7523), exchanged for tokens at the authorization server.

use rmcp::transport::auth::{AuthorizationManager, ClientCredentialsConfig, JwtSigningAlgorithm};

use super::{SignInError, SignedIn, Start, explain, failed, record, signed_in};
use crate::{
    config::{OAuthConfig, SigningAlgorithm},
    connect::auth::store::ClientSource,
};

/// The client-credentials settings of an entry that has them.
pub(super) fn client_credentials_config(
    config: &OAuthConfig,
    url: &str,
    mut scopes: Vec<String>,
) -> Option<ClientCredentialsConfig> {
    for s in &config.scopes {
        if !scopes.contains(s) {
            scopes.push(s.clone());
        }
    }
    let client_id = config.client_id.clone()?;
    let resource = Some(config.resource.clone().unwrap_or_else(|| url.to_owned()));
    if let Some((pem, algorithm)) = &config.private_key {
        // The assertion's audience is the authorization server's issuer (rmcp's default).
        return Some(ClientCredentialsConfig::PrivateKeyJwt {
            client_id,
            signing_key: pem.as_bytes().to_vec(),
            signing_algorithm: jwt_algorithm(*algorithm),
            token_endpoint_audience: None,
            scopes,
            resource,
        });
    }
    Some(ClientCredentialsConfig::ClientSecret {
        client_id,
        client_secret: config.client_secret.clone()?,
        scopes,
        resource,
    })
}

/// Whether `pem` is a private key that signs with `algorithm` (`doctor` asks before any
/// server does): it signs a throwaway claim, which is the one proof a key is usable.
pub fn key_signs(pem: &str, algorithm: SigningAlgorithm) -> Result<(), String> {
    use jsonwebtoken::{Algorithm, EncodingKey, Header, encode};
    let (key, alg) = match algorithm {
        SigningAlgorithm::Es256 => (EncodingKey::from_ec_pem(pem.as_bytes()), Algorithm::ES256),
        SigningAlgorithm::Es384 => (EncodingKey::from_ec_pem(pem.as_bytes()), Algorithm::ES384),
        SigningAlgorithm::Rs256 => (EncodingKey::from_rsa_pem(pem.as_bytes()), Algorithm::RS256),
        SigningAlgorithm::Rs384 => (EncodingKey::from_rsa_pem(pem.as_bytes()), Algorithm::RS384),
        SigningAlgorithm::Rs512 => (EncodingKey::from_rsa_pem(pem.as_bytes()), Algorithm::RS512),
    };
    let key = key.map_err(|e| format!("it is not a private key of that kind: {e}"))?;
    encode(&Header::new(alg), &serde_json::json!({"check": true}), &key)
        .map(|_| ())
        .map_err(|e| format!("it does not sign with {alg:?}: {e}"))
}

/// rmcp's name for a signing algorithm.
fn jwt_algorithm(algorithm: SigningAlgorithm) -> JwtSigningAlgorithm {
    match algorithm {
        SigningAlgorithm::Es256 => JwtSigningAlgorithm::ES256,
        SigningAlgorithm::Es384 => JwtSigningAlgorithm::ES384,
        SigningAlgorithm::Rs256 => JwtSigningAlgorithm::RS256,
        SigningAlgorithm::Rs384 => JwtSigningAlgorithm::RS384,
        SigningAlgorithm::Rs512 => JwtSigningAlgorithm::RS512,
    }
}

/// The client-credentials grant (machine to machine): no person, the configured client's
/// own credentials exchanged for tokens.
pub(super) async fn client_credentials(
    mut m: AuthorizationManager,
    start: Start<'_>,
) -> Result<(AuthorizationManager, SignedIn), SignInError> {
    let initial = crate::connect::auth::scopes::without_person(&m).await;
    let cc = client_credentials_config(
        &start.auth.config,
        &start.auth.url,
        start.scopes.unwrap_or(initial),
    )
    .ok_or_else(|| {
        failed("client credentials need \"clientId\" and \"clientSecret\" or \"privateKey\"")
    })?;
    m.validate_client_credentials_metadata(&cc)
        .and_then(|()| m.configure_client_credentials(&cc))
        .map_err(|e| failed(explain(&e)))?;
    let id = start.auth.config.client_id.clone().unwrap_or_default();
    let kept = record(
        start.auth,
        start.metadata,
        &start.issuer,
        &id,
        ClientSource::ClientCredentials,
        "",
    );
    start.slot.prepare(kept, None);
    let m = exchanged(m, cc, start.auth.limits.timeout).await?;
    signed_in(m, start.issuer).await
}

/// `m` with the tokens `cc` was exchanged for, within `limit`. rmcp's exchange of a
/// private-key assertion holds a form serializer (not `Sync`) across its request's await,
/// so its future is not `Send`: it runs on a blocking thread, on this runtime, where that
/// is allowed. A blocking thread cannot be cancelled from outside, so the limit is kept
/// there: an authorization server that never answers frees the thread at the limit.
async fn exchanged(
    m: AuthorizationManager,
    cc: ClientCredentialsConfig,
    limit: std::time::Duration,
) -> Result<AuthorizationManager, SignInError> {
    let runtime = tokio::runtime::Handle::current();
    let exchange = move || {
        let bounded = tokio::time::timeout(limit, m.exchange_client_credentials(&cc));
        match runtime.block_on(bounded) {
            Ok(done) => done.map(|_| m).map_err(|e| failed(explain(&e))),
            Err(_) => Err(failed(format!(
                "the authorization server did not answer the token request within {}",
                crate::text::seconds(limit)
            ))),
        }
    };
    match tokio::task::spawn_blocking(exchange).await {
        Ok(done) => done,
        Err(e) => Err(failed(format!("the token request stopped: {e}"))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A P-256 key made for tests (the conformance harness's kind), of no account anywhere.
    const TEST_KEY: &str = "-----BEGIN PRIVATE KEY-----\nMIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgkSK9DwfZAngZvOgx\nusyjepts8HCGM1sALTKurjNNTOGhRANCAAT8B2lYOVCDZK71ZVOQKquZM57erJ7g\npvqwqxbUI3wjr02TsKDf8AVXuxuOkqzJ2n+24XRvgzcyaUSPCWcYHNlV\n-----END PRIVATE KEY-----";

    #[test]
    fn a_key_is_checked_by_what_it_signs() {
        assert_eq!(key_signs(TEST_KEY, SigningAlgorithm::Es256), Ok(()));
        let wrong_curve = key_signs(TEST_KEY, SigningAlgorithm::Es384).unwrap_err();
        assert!(
            wrong_curve.contains("does not sign with ES384"),
            "{wrong_curve}"
        );
        let not_rsa = key_signs(TEST_KEY, SigningAlgorithm::Rs256).unwrap_err();
        assert!(
            not_rsa.contains("not a private key of that kind"),
            "{not_rsa}"
        );
        let garbage = "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----";
        assert!(key_signs(garbage, SigningAlgorithm::Es256).is_err());
    }

    #[tokio::test]
    async fn a_token_request_nobody_answers_ends_at_the_limit_and_frees_its_thread() {
        // An authorization server that takes the connection and never answers.
        let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let base = format!("http://{}", silent.local_addr().unwrap());
        let mut m = AuthorizationManager::new_allowing_private_addresses(format!("{base}/mcp"))
            .await
            .unwrap();
        let metadata: rmcp::transport::auth::AuthorizationMetadata =
            serde_json::from_value(serde_json::json!({
            "issuer": base, "authorization_endpoint": format!("{base}/authorize"),
            "token_endpoint": format!("{base}/token"),
            "token_endpoint_auth_methods_supported": ["private_key_jwt"]}))
            .unwrap();
        m.set_metadata(metadata);
        let config = OAuthConfig {
            client_id: Some("ci-bot".into()),
            private_key: Some((TEST_KEY.into(), SigningAlgorithm::Es256)),
            ..OAuthConfig::new()
        };
        let cc = client_credentials_config(&config, &format!("{base}/mcp"), Vec::new()).unwrap();
        m.configure_client_credentials(&cc).unwrap();
        let limit = std::time::Duration::from_millis(300);
        let started = std::time::Instant::now();
        let Err(SignInError::Failed(why)) = exchanged(m, cc, limit).await else {
            panic!("a token request nobody answers cannot succeed");
        };
        assert!(why.contains("did not answer the token request"), "{why}");
        assert!(
            started.elapsed() < limit * 20,
            "ended at its limit: {:?}",
            started.elapsed()
        );
        drop(silent);
    }
}
