//! Who calls the gateway, by name: the HTTP face's caller (a bearer token's, an access
//! token's user and organization, or the local user on stdio) as the gateway's approvals,
//! sealed states, shared sessions and ledger name it.

use gatehouse_http::Caller;

/// A caller as the gateway names it: `user@tenant`, each part JSON-quoted when it holds
/// an `@` or a quote, so no user can pass for another pair; `local` for nobody named (the
/// local user on stdio, the same every time).
pub fn name(caller: &Caller) -> String {
    let part = |s: &str| {
        if s.contains('@') || s.contains('"') {
            serde_json::json!(s).to_string()
        } else {
            s.to_owned()
        }
    };
    if caller.user.is_empty() {
        return "local".into();
    }
    format!("{}@{}", part(&caller.user), part(&caller.tenant))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_user_passes_for_another_pair() {
        let plain = Caller::new("usr-sam", "larkfield", "c");
        assert_eq!(name(&plain), "usr-sam@larkfield");
        let sly = Caller::new("usr-sam@larkfield", "x", "c");
        let other = Caller::new("usr-sam", "larkfield@x", "c");
        assert_ne!(name(&sly), name(&other));
        assert_ne!(name(&sly), name(&plain));
        assert_eq!(name(&Caller::nobody("c")), "local");
    }
}
