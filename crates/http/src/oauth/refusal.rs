//! Why an access token was refused, as a 401's challenge says it (`error`, and the words
//! of its `error_description`) and as the log names it.

use super::dpop;

/// Why a token was refused: 401 with `error="invalid_token"` and these words as its
/// `error_description` (never the token itself).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// Not a JWT at all, or too long.
    Malformed,
    /// A JWT, but not an access token (`typ` is not `at+jwt`).
    NotAnAccessToken,
    /// Signed with an algorithm this server does not accept.
    Algorithm,
    /// Signed with a key the issuer does not publish.
    UnknownKey,
    /// The signature does not verify.
    Signature,
    /// Issued by another authorization server.
    Issuer,
    /// Issued for another resource.
    Audience,
    /// Expired.
    Expired,
    /// Not valid yet.
    NotYetValid,
    /// A required claim is missing or unusable.
    Claims,
    /// An ID token whose `nonce` is not the sign-in's ([`ResourceServer::check_id_token`]).
    Nonce,
    /// A DPoP-bound token whose proof is missing or wrong (RFC 9449 §7.1).
    Proof(dpop::ProofRefusal),
    /// A token presented with the DPoP scheme that is bound to no key.
    NotBound,
    /// A bearer token where only DPoP-bound ones are taken (`--oauth-dpop required`).
    BearerRefused,
    /// The authorization server says the token is no longer active (revoked).
    Revoked,
    /// The authorization server could not be asked whether it still is.
    Unanswered,
}

impl Refusal {
    /// The `error_description`, and the reason the log gives.
    pub fn description(self) -> &'static str {
        match self {
            Refusal::Malformed => "the access token is not a JWT",
            Refusal::NotAnAccessToken => "the token is not an access token (typ at+jwt)",
            Refusal::Algorithm => {
                "the access token is signed with an algorithm this server does not accept"
            }
            Refusal::UnknownKey => {
                "the access token is signed with a key the issuer does not publish"
            }
            Refusal::Signature => "the access token's signature does not verify",
            Refusal::Issuer => "the access token is from another authorization server",
            Refusal::Audience => "the access token is for another resource",
            Refusal::Expired => "the access token has expired",
            Refusal::NotYetValid => "the access token is not valid yet",
            Refusal::Claims => "the access token lacks a required claim (sub, exp, iss, aud)",
            Refusal::Nonce => "the ID token's nonce is not the sign-in's",
            Refusal::Proof(p) => p.description(),
            Refusal::NotBound => "the access token is bound to no key: present it as Bearer",
            Refusal::BearerRefused => {
                "this server takes only tokens bound to a key (DPoP): sign in again with DPoP"
            }
            Refusal::Revoked => "the access token is no longer active at its authorization server",
            Refusal::Unanswered => {
                "the authorization server could not be asked whether the access token is still active"
            }
        }
    }

    /// The challenge's `error` (RFC 6750 §3.1, RFC 9449 §7.1).
    pub fn error_code(self) -> &'static str {
        match self {
            Refusal::Proof(p) if p != dpop::ProofRefusal::Missing => "invalid_dpop_proof",
            _ => "invalid_token",
        }
    }

    /// One word for the log.
    pub fn word(self) -> &'static str {
        match self {
            Refusal::Malformed => "malformed",
            Refusal::NotAnAccessToken => "not_access_token",
            Refusal::Algorithm => "algorithm",
            Refusal::UnknownKey => "unknown_key",
            Refusal::Signature => "signature",
            Refusal::Issuer => "issuer",
            Refusal::Audience => "audience",
            Refusal::Expired => "expired",
            Refusal::NotYetValid => "not_yet_valid",
            Refusal::Claims => "claims",
            Refusal::Nonce => "nonce",
            Refusal::Proof(p) => p.word(),
            Refusal::NotBound => "not_bound",
            Refusal::BearerRefused => "bearer_refused",
            Refusal::Revoked => "revoked",
            Refusal::Unanswered => "introspection_unanswered",
        }
    }
}
