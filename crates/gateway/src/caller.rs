//! Who calls the gateway, by name: the HTTP face's caller (a bearer token's, an access
//! token's user and organization, or the local user on stdio) as the gateway's approvals,
//! sealed states, shared sessions and ledger name it.

pub use gatehouse::caller::CallerName;
use gatehouse_http::Caller;
use rmcp::{RoleServer, service::RequestContext};

/// Who calls a gateway: one caller for every request (stdio), or each request's own, as
/// the HTTP face checked its token.
#[derive(Debug, Clone)]
pub enum Callers {
    /// Every request is this caller: the local user on stdio (a test's caller).
    One(Caller),
    /// Each request's caller as the HTTP face attached it, else `fallback` (nobody: the
    /// face names a caller for every request it lets through).
    OfRequest {
        /// Who a request the face named no caller for acts as.
        fallback: Caller,
    },
}

impl Callers {
    /// The caller of `context`'s request, by name: whose approvals hold, and who the
    /// ledger names.
    pub fn of(&self, context: &RequestContext<RoleServer>) -> CallerName {
        match self {
            Callers::One(caller) => name(caller),
            Callers::OfRequest { fallback } => name(&Caller::of_request(fallback, context)),
        }
    }

    /// The older client's session `context`'s request belongs to, when the gateway is
    /// served over HTTP (its `Mcp-Session-Id`): the session's state is then kept in the
    /// shared store, for every replica. None on stdio.
    pub fn session_of(&self, context: &RequestContext<RoleServer>) -> Option<String> {
        if let Callers::One(_) = self {
            return None;
        }
        let parts = context.extensions.get::<axum::http::request::Parts>()?;
        let id = parts
            .headers
            .get(gatehouse_http::SESSION_HEADER)?
            .to_str()
            .ok()?;
        Some(id.to_owned())
    }
}

/// A caller as the gateway names it ([`CallerName::of`] its user and organization).
pub fn name(caller: &Caller) -> CallerName {
    CallerName::of(&caller.user, &caller.tenant)
}

/// A caller's name as the tests write it (`sam@larkfield`).
#[cfg(test)]
pub(crate) fn who(name: &str) -> CallerName {
    CallerName::kept(name.into())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_user_passes_for_another_pair() {
        let plain = Caller::new("usr-sam", "larkfield", "c");
        assert_eq!(name(&plain).as_str(), "usr-sam@larkfield");
        let sly = Caller::new("usr-sam@larkfield", "x", "c");
        let other = Caller::new("usr-sam", "larkfield@x", "c");
        assert_ne!(name(&sly), name(&other));
        assert_ne!(name(&sly), name(&plain));
        assert_eq!(name(&Caller::nobody("c")), CallerName::local());
        assert_eq!(CallerName::local().as_str(), "local");
    }
}
