//! The names a gateway's client sees for its servers' tools and prompts, and the way
//! back from them: `SERVER__NAME` as the host names tools (the default), or, with
//! `"gatewayNames": "unprefixed"` and one server in the file, the server's own names.
//!
//! Unprefixed names exist so a client written against one server (the conformance
//! harness, which calls `test_simple_text`) can be pointed at the gateway in front of it.
//! The servers file allows them only with one server, where no two servers' names can
//! collide; the one server's own repeats are dropped here, the first kept, each time the
//! list is read.

use std::collections::HashSet;

use gatehouse::{
    catalog::{Catalog, CatalogTool, NAMESPACE_SEPARATOR, Origin, name_problem},
    config::GatewayNames,
};

/// How a gateway names what its servers offer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Names(pub GatewayNames);

impl Names {
    /// Does the client see the servers' own names?
    pub fn unprefixed(self) -> bool {
        self.0 == GatewayNames::Unprefixed
    }

    /// The servers' tools to offer, each with the name the client sees: every server
    /// tool of the catalog that `keep` keeps, less (unprefixed) a repeat of a name
    /// already offered.
    pub fn offered(
        self,
        catalog: &Catalog,
        keep: impl Fn(&CatalogTool) -> bool,
    ) -> Vec<(String, &CatalogTool)> {
        let mut seen = HashSet::new();
        catalog
            .tools()
            .iter()
            .filter(|t| matches!(t.origin, Origin::Server(_)) && keep(t))
            .filter_map(|t| {
                let shown = self.tool_name(t);
                seen.insert(shown.clone()).then_some((shown, t))
            })
            .collect()
    }

    /// The name the client sees for a catalog tool.
    pub fn tool_name(self, tool: &CatalogTool) -> String {
        if self.unprefixed() {
            tool.tool.name.to_string()
        } else {
            tool.name.clone()
        }
    }

    /// The catalog's name for the tool a client called `called`, if a server offers
    /// one by that name (unprefixed: the first server tool with that wire name).
    pub fn catalog_name(self, catalog: &Catalog, called: &str) -> Option<String> {
        if !self.unprefixed() {
            return catalog.get(called).map(|t| t.name.clone());
        }
        catalog
            .tools()
            .iter()
            .find(|t| matches!(t.origin, Origin::Server(_)) && t.tool.name == called)
            .map(|t| t.name.clone())
    }

    /// The name the client sees for `server`'s prompt `name`, or `None` when the name is
    /// not fit to show (empty, too long, control or invisible characters).
    pub fn prompt_name(self, server: &str, name: &str) -> Option<String> {
        if name_problem(name).is_some() {
            return None;
        }
        Some(if self.unprefixed() {
            name.to_owned()
        } else {
            format!("{server}{NAMESPACE_SEPARATOR}{name}")
        })
    }

    /// Which of `servers` offers the prompt a client called `called`, and its own name
    /// there. Prefixed names (`SERVER__NAME`, the prompt's own name kept whole, since no
    /// model API reads it) are matched against each server's name, the longest first.
    pub fn prompt_of<'s>(self, servers: &[&'s str], called: &str) -> Option<(&'s str, String)> {
        if self.unprefixed() {
            return servers.first().map(|s| (*s, called.to_owned()));
        }
        let mut by_length: Vec<&'s str> = servers.to_vec();
        by_length.sort_by_key(|s| std::cmp::Reverse(s.len()));
        by_length.into_iter().find_map(|server| {
            let own = called
                .strip_prefix(server)?
                .strip_prefix(NAMESPACE_SEPARATOR)?;
            (!own.is_empty()).then(|| (server, own.to_owned()))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rmcp::model::Tool;

    fn tool(name: &str) -> Tool {
        serde_json::from_value(serde_json::json!({
            "name": name, "inputSchema": {"type": "object"}
        }))
        .unwrap()
    }

    #[test]
    fn unprefixed_names_are_the_servers_own_and_a_repeat_is_dropped() {
        let catalog = Catalog::build(vec![(
            gatehouse::testing::server_name("fx"),
            vec![tool("echo"), tool("echo"), tool("add")],
        )]);
        let names = Names(GatewayNames::Unprefixed);
        let shown: Vec<String> = names
            .offered(&catalog, |_| true)
            .into_iter()
            .map(|(n, _)| n)
            .collect();
        assert_eq!(shown, ["echo", "add"]);
        assert_eq!(
            names.catalog_name(&catalog, "add").as_deref(),
            Some("fx__add")
        );
        assert_eq!(names.catalog_name(&catalog, "fx__add"), None);
        let prefixed = Names(GatewayNames::Prefixed);
        assert_eq!(prefixed.catalog_name(&catalog, "add"), None);
        assert_eq!(
            prefixed.catalog_name(&catalog, "fx__add").as_deref(),
            Some("fx__add")
        );
    }

    #[test]
    fn prompt_names_go_both_ways_and_unfit_ones_are_refused() {
        let prefixed = Names(GatewayNames::Prefixed);
        assert_eq!(
            prefixed.prompt_name("desk", "greet").as_deref(),
            Some("desk__greet")
        );
        assert_eq!(prefixed.prompt_name("desk", "gr\u{200b}eet"), None);
        assert_eq!(prefixed.prompt_name("desk", "a\u{1b}[2J"), None);
        let servers = ["desk", "desk__b"];
        assert_eq!(
            prefixed.prompt_of(&servers, "desk__b__x"),
            Some(("desk__b", "x".to_owned()))
        );
        assert_eq!(
            prefixed.prompt_of(&servers, "desk__greet"),
            Some(("desk", "greet".to_owned()))
        );
        assert_eq!(prefixed.prompt_of(&servers, "other__greet"), None);
        assert_eq!(prefixed.prompt_of(&servers, "desk__"), None);
        let unprefixed = Names(GatewayNames::Unprefixed);
        assert_eq!(
            unprefixed.prompt_of(&["fx"], "test_simple_prompt"),
            Some(("fx", "test_simple_prompt".to_owned()))
        );
    }
}
