//! The products the generated servers stand for: each an entity or two with the fields
//! people use, and the tools that product's MCP server typically has beyond the plain
//! list / get / create / update / delete / search of each entity. Written as such servers
//! word their tools, so that they compete with the pinned real servers for the same words
//! (issues in Jira and on GitHub, messages in Discord and in Slack, files in Dropbox and on
//! the local disk).

use std::sync::LazyLock;

use serde::Deserialize;

/// A thing a product keeps, and which of the six plain tools its server has for it.
#[derive(Deserialize)]
pub struct Entity {
    /// One of them, in words (`issue`, `calendar event`).
    pub one: &'static str,
    /// Several.
    pub many: &'static str,
    /// Which plain tools: `l`ist, `g`et, `c`reate, `u`pdate, `d`elete, `s`earch.
    pub verbs: &'static str,
    /// Fields a create or update takes: name, JSON type, description.
    pub fields: Vec<(&'static str, &'static str, &'static str)>,
}

/// A tool of its own: name, description, parameters (name, JSON type, description,
/// required).
pub type Extra = (
    &'static str,
    &'static str,
    Vec<(&'static str, &'static str, &'static str, bool)>,
);

/// One product's server.
#[derive(Deserialize)]
pub struct Domain {
    /// The server's name in a servers file.
    pub server: &'static str,
    /// The product as its tools name it.
    pub product: &'static str,
    /// What it keeps.
    pub entities: Vec<Entity>,
    /// Its own tools.
    pub extras: Vec<Extra>,
}

/// Every generated product, in the order their servers are added: `domains.json`, read
/// once (the products are data, kept apart from the code that makes their tools; the
/// strings borrow from the file's text in the binary, which has no escapes to undo).
pub static DOMAINS: LazyLock<Vec<Domain>> = LazyLock::new(|| {
    serde_json::from_str(include_str!("domains.json")).expect("catalog/domains.json is read")
});

#[cfg(test)]
mod tests {
    #[test]
    fn every_product_is_read_with_its_entities_and_tools() {
        assert_eq!(super::DOMAINS.len(), 91);
        for d in super::DOMAINS.iter() {
            assert!(
                !d.entities.is_empty() || !d.extras.is_empty(),
                "{}",
                d.server
            );
            for e in &d.entities {
                assert!(e.verbs.chars().all(|v| "lgcuds".contains(v)), "{}", e.one);
            }
        }
    }
}
