//! Through whom an `ask` must be answered (`"via"`, on an ask rule or in the `gatehouse`
//! part's `"approvals"`): the caller's client or, where the client (or the model behind
//! it) must not answer for the person, only a person signed in on a gateway's approval
//! page.

use serde_json::Value;

/// Who may answer an ask.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Via {
    /// The caller's client (its form), or the approval page for a client that takes only
    /// URL questions (`"client"`, the default).
    #[default]
    Client,
    /// Only a person on the approval page, signed in there interactively through the
    /// OAuth issuer, never with the MCP client's bearer token (`"page"`).
    Page,
}

impl Via {
    /// The words a servers file uses.
    pub const WORDS: [(&'static str, Via); 2] = [("client", Via::Client), ("page", Via::Page)];

    /// Read a `"via"` value.
    pub fn parse(value: &Value) -> Result<Via, String> {
        let word = value.as_str().unwrap_or_default();
        Via::WORDS
            .iter()
            .find(|(w, _)| *w == word)
            .map(|(_, via)| *via)
            .ok_or_else(|| "\"via\" must be \"client\" or \"page\"".into())
    }
}

/// A rule's `"via"`, if it gives one: only an `ask` rule may.
pub(super) fn of_rule(
    map: &serde_json::Map<String, Value>,
    decision: super::Decision,
) -> Result<Option<Via>, String> {
    let Some(value) = map.get("via") else {
        return Ok(None);
    };
    if decision != super::Decision::Ask {
        return Err("\"via\" is for an \"ask\" rule only (who answers the ask)".into());
    }
    Via::parse(value).map(Some)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn via_is_client_or_page_and_only_on_an_ask() {
        let map = |v: Value| v.as_object().unwrap().clone();
        let ask = super::super::Decision::Ask;
        assert_eq!(of_rule(&map(json!({})), ask), Ok(None));
        assert_eq!(
            of_rule(&map(json!({"via": "page"})), ask),
            Ok(Some(Via::Page))
        );
        assert_eq!(
            of_rule(&map(json!({"via": "client"})), ask),
            Ok(Some(Via::Client))
        );
        assert!(of_rule(&map(json!({"via": "email"})), ask).is_err());
        assert!(of_rule(&map(json!({"via": true})), ask).is_err());
        let deny = super::super::Decision::Deny;
        let e = of_rule(&map(json!({"via": "page"})), deny).unwrap_err();
        assert!(e.contains("ask"), "{e}");
    }
}
