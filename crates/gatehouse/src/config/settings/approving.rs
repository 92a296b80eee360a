//! How a gateway takes the person's approval (`"approvals"` in the `gatehouse` part):
//! through whom an ask is answered for every ask (`"via"`: `"client"`, the default, or
//! `"page"`; an ask rule's own `"via"` wins for its calls), and whether a `remember`
//! ticked in the client's form is kept (`"rememberFromClient"`, default false: a client,
//! or the model driving it, could otherwise approve a tool for good).

use serde_json::Value;

use crate::rules::{Rules, Via};

/// The `approvals` setting.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Approvals {
    /// Who answers an ask that no rule's `via` names.
    pub via: Via,
    /// Is a `remember` from the client's form kept (where the policy offers it)?
    pub remember_from_client: bool,
}

impl Approvals {
    /// Read `"approvals"`: an object with `via` and `rememberFromClient`, both optional.
    pub fn parse(value: &Value) -> Result<Approvals, String> {
        let Value::Object(map) = value else {
            return Err("\"approvals\" must be an object: {\"via\": \"client\"|\"page\", \"rememberFromClient\": false}".into());
        };
        let mut approvals = Approvals::default();
        for (key, v) in map {
            match key.as_str() {
                "via" => {
                    approvals.via = Via::parse(v).map_err(|e| format!("\"approvals\": {e}"))?
                }
                "rememberFromClient" => {
                    approvals.remember_from_client = v.as_bool().ok_or_else(|| {
                        "\"approvals\": \"rememberFromClient\" must be true or false".to_string()
                    })?
                }
                other => {
                    return Err(format!(
                        "\"approvals\": unknown key \"{other}\" (it has via, rememberFromClient)"
                    ));
                }
            }
        }
        Ok(approvals)
    }

    /// Who answers the ask of `rules[index]` (`None`: an ask no rule made, the default's
    /// or a hook's): the rule's own `via`, else this setting's.
    pub fn via_for(&self, rules: &Rules, index: Option<usize>) -> Via {
        index
            .and_then(|i| rules.all().get(i))
            .and_then(|r| r.via)
            .unwrap_or(self.via)
    }

    /// Must some ask be answered on the approval page (this setting, or any rule)?
    pub fn page_anywhere(&self, rules: &Rules) -> bool {
        self.via == Via::Page || rules.all().iter().any(|r| r.via == Some(Via::Page))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn approvals_are_read_and_a_rules_via_wins() {
        assert_eq!(Approvals::parse(&json!({})), Ok(Approvals::default()));
        let page = Approvals::parse(&json!({"via": "page", "rememberFromClient": true})).unwrap();
        assert_eq!(page.via, Via::Page);
        assert!(page.remember_from_client);
        for bad in [
            json!("page"),
            json!({"via": "sms"}),
            json!({"rememberFromClient": 1}),
            json!({"who": 1}),
        ] {
            assert!(Approvals::parse(&bad).is_err(), "{bad}");
        }
        let rules = Rules::parse(&json!([
            {"tool": "a__*", "decision": "ask", "via": "page"},
            {"tool": "b__*", "decision": "ask"}
        ]))
        .unwrap();
        let client = Approvals::default();
        assert_eq!(client.via_for(&rules, Some(0)), Via::Page);
        assert_eq!(client.via_for(&rules, Some(1)), Via::Client);
        assert_eq!(client.via_for(&rules, None), Via::Client);
        assert_eq!(page.via_for(&rules, None), Via::Page);
        assert!(client.page_anywhere(&rules));
        assert!(!client.page_anywhere(&Rules::default()));
        assert!(page.page_anywhere(&Rules::default()));
    }
}
