//! Which of a server's tools the host offers, and which it always sends the model in full:
//! `enabledTools`, `disabledTools` and `alwaysLoad` of a server's entry, each a list of
//! glob patterns on the tool's own name, in the rules' dialect (`get_*`, `browser_?ab*`,
//! `{get,list}_*`, `[gs]et_*`; `*` any run of characters, `?` one). A tool left out by them is not in the catalog: unknown to the
//! model and to the policy alike.

use serde_json::Value;

/// Most patterns one of the three keys may hold.
pub const MAX_TOOL_PATTERNS: usize = 256;
/// Longest pattern, in characters (twice the longest tool name a server may give).
pub const MAX_PATTERN_CHARS: usize = 256;

/// A glob on tool names, checked when the file is read: the dialect of the rules'
/// patterns ([`crate::rules::conditions::glob`], globset's), so a pattern means the same
/// in `enabledTools` as in a rule's `tool`.
#[derive(Debug, Clone)]
pub struct Pattern {
    text: String,
    matcher: globset::GlobMatcher,
}

impl PartialEq for Pattern {
    fn eq(&self, other: &Pattern) -> bool {
        self.text == other.text
    }
}

impl Eq for Pattern {}

impl Pattern {
    /// A pattern from a servers file, or why it cannot be one.
    pub fn parse(text: &str) -> Result<Pattern, String> {
        if text.is_empty() {
            return Err("a tool pattern may not be empty".into());
        }
        if text.chars().count() > MAX_PATTERN_CHARS {
            return Err(format!(
                "a tool pattern may be at most {MAX_PATTERN_CHARS} characters long"
            ));
        }
        if text.chars().any(|c| c.is_control() || c.is_whitespace()) {
            return Err(format!(
                "the tool pattern {text:?} holds whitespace or a control character"
            ));
        }
        let matcher = crate::rules::conditions::glob(text)
            .map_err(|e| format!("the tool pattern {text:?} is not a glob: {e}"))?;
        Ok(Pattern {
            text: text.to_owned(),
            matcher,
        })
    }

    /// Does `name` match? In linear time: globset matches with a regular expression.
    pub fn matches(&self, name: &str) -> bool {
        self.matcher.is_match(name)
    }

    /// The pattern as written.
    pub fn as_text(&self) -> String {
        self.text.clone()
    }
}

/// Which tools of one server are offered, and which are always sent in full.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ToolRules {
    /// `enabledTools`: only tools matching one of these (all when `None`).
    pub enabled: Option<Vec<Pattern>>,
    /// `disabledTools`: never a tool matching one of these, even when enabled.
    pub disabled: Vec<Pattern>,
    /// `alwaysLoad`: tools sent in full on every model call even when the catalog is
    /// searched instead (`true` in the file is `*`).
    pub always_load: Vec<Pattern>,
    /// The digest of the server's `sandbox` as its entry sets it: part of each of its
    /// tools' definition digests, so that an approval remembered for a tool in one box
    /// does not hold in another (a changed box asks again, as a changed definition does).
    pub boxed: Option<String>,
}

impl ToolRules {
    /// Is this tool (by its own name) offered at all?
    pub fn offers(&self, tool: &str) -> bool {
        let enabled = self
            .enabled
            .as_ref()
            .is_none_or(|e| e.iter().any(|p| p.matches(tool)));
        enabled && !self.disabled.iter().any(|p| p.matches(tool))
    }

    /// Is this tool always sent in full?
    pub fn always_loads(&self, tool: &str) -> bool {
        self.always_load.iter().any(|p| p.matches(tool))
    }

    /// Do these rules leave every tool as it is?
    pub fn is_default(&self) -> bool {
        self == &ToolRules::default()
    }

    /// The patterns of the three keys that match none of `names`, with the key each comes
    /// from, so the person learns of a pattern that does nothing.
    pub fn unmatched(&self, names: &[&str]) -> Vec<(&'static str, String)> {
        let lists = [
            ("enabledTools", self.enabled.as_deref().unwrap_or(&[])),
            ("disabledTools", &self.disabled[..]),
            ("alwaysLoad", &self.always_load[..]),
        ];
        lists
            .into_iter()
            .flat_map(|(key, patterns)| {
                patterns
                    .iter()
                    .filter(|p| !names.iter().any(|n| p.matches(n)))
                    .map(move |p| (key, p.as_text()))
            })
            .collect()
    }
}

/// `enabledTools`, `disabledTools` and `alwaysLoad` of one server's entry.
pub(super) fn rules(entry: &serde_json::Map<String, Value>) -> Result<ToolRules, String> {
    let enabled = entry
        .get("enabledTools")
        .map(|v| patterns("enabledTools", v))
        .transpose()?;
    let disabled = match entry.get("disabledTools") {
        None => Vec::new(),
        Some(v) => patterns("disabledTools", v)?,
    };
    let always_load = match entry.get("alwaysLoad") {
        None | Some(Value::Bool(false)) => Vec::new(),
        Some(Value::Bool(true)) => vec![Pattern::parse("*")?],
        Some(v @ Value::Array(_)) => patterns("alwaysLoad", v)?,
        Some(_) => {
            return Err("\"alwaysLoad\" must be true, false or an array of tool patterns".into());
        }
    };
    Ok(ToolRules {
        enabled,
        disabled,
        always_load,
        boxed: None,
    })
}

fn patterns(key: &str, value: &Value) -> Result<Vec<Pattern>, String> {
    let Value::Array(items) = value else {
        return Err(format!(
            "\"{key}\" must be an array of tool names or patterns"
        ));
    };
    if items.len() > MAX_TOOL_PATTERNS {
        return Err(format!(
            "\"{key}\" may hold at most {MAX_TOOL_PATTERNS} patterns, not {}",
            items.len()
        ));
    }
    items
        .iter()
        .map(|i| match i {
            Value::String(s) => Pattern::parse(s).map_err(|e| format!("\"{key}\": {e}")),
            other => Err(format!("\"{key}\" must hold strings, not {other}")),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::Pattern;

    #[test]
    fn tool_patterns_match_as_globs_and_in_linear_time() {
        let p = |t: &str| Pattern::parse(t).unwrap();
        assert!(p("get_*").matches("get_ticket"));
        assert!(p("get_*").matches("get_"));
        assert!(!p("get_*").matches("list_get_ticket"));
        assert!(p("*_ticket").matches("open_ticket"));
        assert!(p("browser_?lick").matches("browser_click"));
        assert!(!p("browser_?lick").matches("browser_lick"));
        assert!(p("*").matches(""));
        assert!(p("exact").matches("exact") && !p("exact").matches("exactly"));
        assert!(p("a*b*c").matches("a__b__c") && !p("a*b*c").matches("a__c__b"));
        // The worst case of naive backtracking: immediate here.
        let long = "a".repeat(10_000);
        assert!(!p(&format!("{}b", "a*".repeat(100))).matches(&long));
        for bad in [
            "",
            "has space",
            "tab\there",
            &"x".repeat(257),
            "get_[",
            "{a,b",
        ] {
            assert!(Pattern::parse(bad).is_err(), "{bad:?}");
        }
    }

    /// `enabledTools` and a rule's `tool` read a pattern in one dialect: each pattern matches
    /// the same names in both.
    #[test]
    fn a_tool_pattern_means_what_it_means_in_a_rule() {
        let patterns = [
            "get_*",
            "browser_?lick",
            "{get,list}_issue*",
            "[gs]et_*",
            "*",
            "a*b*c",
        ];
        let names = [
            "get_issue",
            "list_issues",
            "set_x",
            "browser_click",
            "a__b__c",
            "list",
            "",
        ];
        for pattern in patterns {
            let in_rules = crate::rules::conditions::glob(pattern).unwrap();
            let in_file = Pattern::parse(pattern).unwrap();
            for name in names {
                assert_eq!(
                    in_file.matches(name),
                    in_rules.is_match(name),
                    "{pattern} on {name:?}"
                );
            }
        }
        assert!(
            Pattern::parse("{get,list}_issue*")
                .unwrap()
                .matches("list_issues")
        );
    }
}
