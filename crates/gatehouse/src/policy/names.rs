//! Rules, `allow` entries and `--tools` names that name no tool of the servers they name
//! (a typo in the prefix, a bare tool name, another host's `mcp__server__tool`), each with
//! the nearest real name: a rule that matches nothing protects nothing, silently.

use crate::config::{NAMESPACE_SEPARATOR, Settings, suggest};

/// Most edits between a name and the real one still offered as "did you mean".
pub const MAX_NAME_DISTANCE: usize = 3;

/// Most names told at once: each looks for its nearest among every tool, and a file
/// (a project's deny rules, say) may hold many.
pub const MAX_UNMATCHED_TOLD: usize = 32;

/// Claude Code's prefix for an MCP tool (`mcp__server__tool`).
const CLAUDE_CODE_PREFIX: &str = "mcp__";

/// One name that matches no tool.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unmatched {
    /// Where it is written: `allow[0]`, `rules[2]`, `--tools`.
    pub place: String,
    /// The name or pattern as written.
    pub name: String,
    /// The real tool nearest to it, if one is near.
    pub nearest: Option<String>,
}

impl Unmatched {
    /// In words: `allow[0] names desk__get_tiket, which no server offers (did you mean
    /// desk__get_ticket?)`.
    pub fn describe(&self) -> String {
        let mut text = format!("{} names {}, which no server offers", self.place, self.name);
        if let Some(near) = &self.nearest {
            text.push_str(&format!(" (did you mean {near}?)"));
        }
        text
    }
}

/// What the policy's names are judged against: the tools offered, and the servers that
/// are configured but did not list their tools (whose names cannot be told now).
pub struct Offered<'a> {
    /// Every tool's namespaced name.
    pub tools: &'a [String],
    /// Servers in the file whose tools are not known (down, or failed to start).
    pub unknown_servers: &'a [String],
}

impl Offered<'_> {
    /// Can a name be judged? Not when the server it names did not list its tools.
    fn judges(&self, name: &str) -> bool {
        match name.split_once(NAMESPACE_SEPARATOR) {
            Some((server, _)) => !self.unknown_servers.iter().any(|s| s == server),
            // A bare name or a pattern over every server could be any server's.
            None => self.unknown_servers.is_empty(),
        }
    }

    /// The real name nearest to `name`.
    fn nearest(&self, name: &str) -> Option<String> {
        let tools = self.tools.iter().map(String::as_str);
        if let Some(rest) = name.strip_prefix(CLAUDE_CODE_PREFIX)
            && self.tools.iter().any(|t| t == rest)
        {
            return Some(rest.to_owned());
        }
        // A bare tool name: the server's tool of that name.
        if !name.contains(NAMESPACE_SEPARATOR)
            && let Some(t) = self.tools.iter().find(|t| {
                t.split_once(NAMESPACE_SEPARATOR)
                    .is_some_and(|(_, tool)| tool == name)
            })
        {
            return Some(t.clone());
        }
        suggest::nearest(name, tools, MAX_NAME_DISTANCE).map(str::to_owned)
    }
}

/// Every `allow` entry and rule in `settings` that matches no offered tool, where that
/// can be told; the first [`MAX_UNMATCHED_TOLD`].
pub fn unmatched(settings: &Settings, offered: &Offered<'_>) -> Vec<Unmatched> {
    let mut found = Vec::new();
    for (i, name) in settings.allow.iter().enumerate() {
        if found.len() == MAX_UNMATCHED_TOLD {
            return found;
        }
        if !offered.tools.contains(name) && offered.judges(name) {
            found.push(Unmatched {
                place: format!("allow[{i}]"),
                nearest: offered.nearest(name),
                name: name.clone(),
            });
        }
    }
    for (i, rule) in settings.rules.all().iter().enumerate() {
        if found.len() == MAX_UNMATCHED_TOLD {
            break;
        }
        if !offered.tools.iter().any(|t| rule.matches_name(t)) && offered.judges(&rule.tool) {
            found.push(Unmatched {
                place: format!("rules[{i}]"),
                nearest: offered.nearest(&rule.tool),
                name: rule.tool.clone(),
            });
        }
    }
    found
}

/// `--tools` names that no server offers, with the nearest real one.
pub fn unmatched_offer(names: &[String], offered: &Offered<'_>) -> Vec<Unmatched> {
    names
        .iter()
        .filter(|n| !offered.tools.contains(n))
        .take(MAX_UNMATCHED_TOLD)
        .map(|n| Unmatched {
            place: "--tools".into(),
            name: n.clone(),
            nearest: offered.nearest(n),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings(json: serde_json::Value) -> Settings {
        crate::config::Config::from_value(
            serde_json::json!({"mcpServers": {}, "gatehouse": json}),
            "f",
            &crate::config::Identity::default(),
        )
        .unwrap()
        .settings
    }

    #[test]
    fn names_that_match_nothing_are_told_with_the_real_one() {
        let tools: Vec<String> = [
            "desk__get_ticket",
            "desk__search_knowledge",
            "time__get_current_time",
        ]
        .map(String::from)
        .to_vec();
        let offered = Offered {
            tools: &tools,
            unknown_servers: &[],
        };
        let s = settings(serde_json::json!({
            "allow": ["desk__get_tiket", "get_ticket", "mcp__time__get_current_time", "desk__get_ticket"],
            "rules": [{"tool": "dsk__*", "decision": "deny"}, {"tool": "desk__*", "decision": "ask"},
                      {"tool": "*__delete", "decision": "deny"}]
        }));
        let found: Vec<(String, Option<String>)> = unmatched(&s, &offered)
            .into_iter()
            .map(|u| (u.place, u.nearest))
            .collect();
        assert_eq!(
            found,
            [
                ("allow[0]".into(), Some("desk__get_ticket".into())),
                ("allow[1]".into(), Some("desk__get_ticket".into())),
                ("allow[2]".into(), Some("time__get_current_time".into())),
                ("rules[0]".into(), None),
                ("rules[2]".into(), None),
            ]
        );
        let described = unmatched(&s, &offered)[0].describe();
        assert_eq!(
            described,
            "allow[0] names desk__get_tiket, which no server offers (did you mean desk__get_ticket?)"
        );
    }

    #[test]
    fn at_most_a_bounded_number_of_names_is_told() {
        let tools = vec!["desk__get_ticket".to_owned()];
        let offered = Offered {
            tools: &tools,
            unknown_servers: &[],
        };
        let allow: Vec<String> = (0..100).map(|i| format!("desk__nothing_{i}")).collect();
        let s = settings(serde_json::json!({"allow": allow}));
        assert_eq!(unmatched(&s, &offered).len(), MAX_UNMATCHED_TOLD);
        assert_eq!(unmatched_offer(&allow, &offered).len(), MAX_UNMATCHED_TOLD);
    }

    #[test]
    fn a_server_that_did_not_list_its_tools_is_not_judged() {
        let tools = vec!["desk__get_ticket".to_owned()];
        let down = vec!["time".to_owned()];
        let offered = Offered {
            tools: &tools,
            unknown_servers: &down,
        };
        let s = settings(serde_json::json!({
            "allow": ["time__get_current_time", "get_current_time", "desk__nothing"]}));
        let places: Vec<String> = unmatched(&s, &offered)
            .into_iter()
            .map(|u| u.place)
            .collect();
        assert_eq!(places, ["allow[2]"]);
    }
}
