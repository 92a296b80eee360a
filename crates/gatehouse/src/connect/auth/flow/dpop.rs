//! Whether a sign-in binds its tokens to a key of the host's (DPoP, RFC 9449): when the
//! entry says so, or when the server's challenge uses the DPoP scheme; and whether the
//! authorization server can, before anything is sent there.

use rmcp::transport::auth::AuthorizationMetadata;

use super::{SignInError, failed};
use crate::{
    config::OAuthConfig,
    connect::auth::dpop::{DPOP_ALGORITHM, challenge_is_dpop},
    text::visible_line,
};

/// Whether this sign-in binds its tokens: `"dpop"` in the entry decides; without it, the
/// server's 401 challenge does.
pub(super) fn wanted(config: &OAuthConfig, challenge: Option<&str>) -> bool {
    match config.dpop {
        Some(choice) => choice,
        None => challenge.is_some_and(challenge_is_dpop),
    }
}

/// Refuse an authorization server that does not say it takes proofs signed as the host
/// signs them (`dpop_signing_alg_values_supported`, RFC 9449 §5.1): its tokens would come
/// back unbound, and a server that asks for DPoP would refuse them.
pub(super) fn check_server(
    metadata: &AuthorizationMetadata,
    issuer: &str,
) -> Result<(), SignInError> {
    let takes = metadata
        .additional_fields
        .get("dpop_signing_alg_values_supported")
        .and_then(|v| v.as_array())
        .is_some_and(|algs| algs.iter().any(|a| a == DPOP_ALGORITHM));
    if takes {
        return Ok(());
    }
    Err(failed(format!(
        "tokens bound to a key (DPoP) are wanted, but the authorization server {} does not take DPoP proofs signed with {DPOP_ALGORITHM} (dpop_signing_alg_values_supported)",
        visible_line(issuer)
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_entry_decides_else_the_challenge_and_the_server_must_take_es256() {
        let mut config = OAuthConfig::new();
        assert!(wanted(&config, Some("DPoP resource_metadata=\"x\"")));
        assert!(!wanted(&config, Some("Bearer resource_metadata=\"x\"")));
        assert!(!wanted(&config, None));
        config.dpop = Some(false);
        assert!(!wanted(&config, Some("DPoP error=\"use_dpop_nonce\"")));
        config.dpop = Some(true);
        assert!(wanted(&config, None));
        let metadata = |algs: serde_json::Value| -> AuthorizationMetadata {
            serde_json::from_value(serde_json::json!({"authorization_endpoint": "https://as/a",
                "token_endpoint": "https://as/t", "dpop_signing_alg_values_supported": algs}))
            .unwrap()
        };
        assert!(
            check_server(
                &metadata(serde_json::json!(["ES256", "RS256"])),
                "https://as"
            )
            .is_ok()
        );
        let refused = check_server(&metadata(serde_json::json!(["RS256"])), "https://as")
            .unwrap_err()
            .to_string();
        assert!(
            refused.contains("does not take DPoP proofs signed with ES256"),
            "{refused}"
        );
        assert!(check_server(&metadata(serde_json::Value::Null), "https://as").is_err());
    }
}
