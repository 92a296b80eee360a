//! Who belongs to which organization, as the server behind the HTTP layer keeps it: the
//! layer asks which organization an access token that names none acts in, and, on servers
//! that check membership on every call, whether a caller may open a session at all.

use crate::Caller;

/// The JSON-RPC error code of a request refused for want of membership (the reference
/// servers answer their own refusals with it too).
pub const FORBIDDEN_CODE: i32 = -32003;
/// The message of that refusal.
pub const FORBIDDEN_MESSAGE: &str = "forbidden: you have no access to this organization";

/// The memberships a server keeps, as the HTTP layer needs them. The layer holds no list of
/// its own: the server that decides on every call is the one to say.
pub trait Members: std::fmt::Debug + Send + Sync {
    /// Whether the caller is a member of the organization it acts in.
    fn is_member(&self, caller: &Caller) -> bool;
    /// The organization `user` belongs to when it belongs to exactly one, else `None`.
    fn sole_organization(&self, user: &str) -> Option<&str>;
}

/// Nobody belongs anywhere: for a server that keeps no memberships (an access token that
/// names no organization then acts in none, which such a server does not ask about).
#[derive(Debug, Clone, Copy, Default)]
pub struct NoMembers;

impl Members for NoMembers {
    fn is_member(&self, _: &Caller) -> bool {
        false
    }

    fn sole_organization(&self, _: &str) -> Option<&str> {
        None
    }
}
