//! What the person says of the flow between calls (`"flows"` in the `gatehouse` part):
//! whose results they trust (`"trusted"`: globs over `server__tool`, or a server's name),
//! which tools are consequential (`"consequential"`: globs; a tool that declares
//! `destructiveHint: true` is one as well), and whether untrusted results are spotlit
//! for the model (`"spotlight"`, off by default).
//!
//! Every server's results are untrusted unless named here: a result carries text someone
//! else wrote (a customer's ticket, a web page, an email), which the host cannot tell from
//! the server's own, so only the person can vouch for a server. A project's file cannot set
//! this without the person's trust (it is not a tightening setting).

use globset::{GlobSet, GlobSetBuilder};
use serde_json::Value;

/// Most patterns `trusted` or `consequential` may hold.
pub const MAX_FLOW_PATTERNS: usize = 1_000;

/// The `flows` setting.
#[derive(Debug, Clone, Default)]
pub struct FlowSettings {
    /// Tools whose results are trusted, as written.
    pub trusted: Vec<String>,
    /// Tools that send, pay, write or delete, as written.
    pub consequential: Vec<String>,
    /// Wrap untrusted results in per-turn random delimiters with a note to the model.
    pub spotlight: bool,
    trusted_set: GlobSet,
    consequential_set: GlobSet,
}

impl FlowSettings {
    /// Read `"flows"`: an object with `trusted`, `consequential` and `spotlight`.
    pub fn parse(value: &Value) -> Result<FlowSettings, String> {
        let Value::Object(map) = value else {
            return Err("\"flows\" must be an object: {\"trusted\": [..], \"consequential\": [..], \"spotlight\": false}".into());
        };
        let mut flows = FlowSettings::default();
        for (key, v) in map {
            match key.as_str() {
                "trusted" => flows.trusted = patterns(key, v)?,
                "consequential" => flows.consequential = patterns(key, v)?,
                "spotlight" => {
                    flows.spotlight = v.as_bool().ok_or_else(|| {
                        "\"flows\": \"spotlight\" must be true or false".to_string()
                    })?
                }
                other => {
                    return Err(format!(
                        "\"flows\": unknown key \"{other}\" (it has trusted, consequential, spotlight)"
                    ));
                }
            }
        }
        flows.trusted_set = set("trusted", &flows.trusted)?;
        flows.consequential_set = set("consequential", &flows.consequential)?;
        Ok(flows)
    }

    /// Does the person trust the results of `tool` (`server__tool`) of `server`?
    pub fn trusts(&self, server: &str, tool: &str) -> bool {
        self.trusted.iter().any(|p| p == server) || self.trusted_set.is_match(tool)
    }

    /// Is `tool` one the person marked consequential?
    pub fn is_consequential(&self, tool: &str) -> bool {
        self.consequential_set.is_match(tool)
    }
}

fn patterns(key: &str, v: &Value) -> Result<Vec<String>, String> {
    let bad = || format!("\"flows\": \"{key}\" must be a list of tool globs or server names");
    let Value::Array(items) = v else {
        return Err(bad());
    };
    if items.len() > MAX_FLOW_PATTERNS {
        return Err(format!(
            "\"flows\": \"{key}\" holds more than {MAX_FLOW_PATTERNS} patterns"
        ));
    }
    items
        .iter()
        .map(|i| match i {
            Value::String(s) if !s.is_empty() => Ok(s.clone()),
            _ => Err(bad()),
        })
        .collect()
}

fn set(key: &str, patterns: &[String]) -> Result<GlobSet, String> {
    let mut builder = GlobSetBuilder::new();
    for p in patterns {
        let glob = crate::rules::conditions::glob(p)
            .map_err(|e| format!("\"flows\": \"{key}\" {p:?}: {e}"))?;
        builder.add(glob.glob().clone());
    }
    builder
        .build()
        .map_err(|e| format!("\"flows\": \"{key}\": {e}"))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn a_server_name_or_a_glob_is_trusted_and_nothing_else() {
        let f = FlowSettings::parse(&json!({"trusted": ["cmdb", "orders__get_*"],
            "consequential": ["*__send_*"]}))
        .unwrap();
        assert!(f.trusts("cmdb", "cmdb__find_host"));
        assert!(f.trusts("orders", "orders__get_order_status"));
        assert!(!f.trusts("support", "support__get_ticket"));
        assert!(!f.trusts("cmdbx", "cmdbx__find_host"));
        assert!(f.is_consequential("mail__send_email"));
        assert!(!f.is_consequential("mail__read_inbox"));
        assert!(!FlowSettings::default().trusts("cmdb", "cmdb__find_host"));
    }

    #[test]
    fn a_mistake_is_named() {
        for (bad, said) in [
            (json!([]), "must be an object"),
            (json!({"trusted": "cmdb"}), "list of tool globs"),
            (json!({"trusted": [""]}), "list of tool globs"),
            (
                json!({"consequential": ["a[b"]}),
                "\"consequential\" \"a[b\"",
            ),
            (json!({"spotlight": "yes"}), "true or false"),
            (json!({"trust": []}), "unknown key \"trust\""),
        ] {
            let e = FlowSettings::parse(&bad).unwrap_err();
            assert!(e.contains(said), "{e}");
        }
    }
}
