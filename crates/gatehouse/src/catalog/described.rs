//! Descriptions put in place of the servers' for the model and `search_tools` (an eval's
//! variant), never for the policy: a tool's digest stays its server's own definition.

use std::{
    collections::BTreeMap,
    sync::{Arc, OnceLock},
};

use super::{Catalog, CatalogTool};

impl CatalogTool {
    /// The description the model reads: a variant's ([`CatalogTool::described`]), else
    /// the server's.
    pub fn description(&self) -> &str {
        self.described
            .as_deref()
            .or(self.tool.description.as_deref())
            .unwrap_or("")
    }
}

impl Catalog {
    /// Put `instead` (tool name → description) in place of the servers' descriptions for
    /// the model and the search; a name not in it reads its server's again.
    pub fn describe(&mut self, instead: &BTreeMap<String, String>) {
        for t in &mut self.tools {
            t.described = instead.get(&t.name).map(|d| Arc::from(d.as_str()));
        }
        self.request_bytes = OnceLock::new();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::search::ToolIndex;
    use crate::config::name::server_name;

    fn catalog() -> Catalog {
        let tool = |name: &str, description: &str| {
            serde_json::from_value(serde_json::json!({"name": name, "description": description,
                "inputSchema": {"type": "object"}}))
            .unwrap()
        };
        Catalog::build_with(
            vec![(
                server_name("support"),
                vec![
                    tool("get_ticket", "Get one support ticket by its ID"),
                    tool(
                        "search_knowledge",
                        "Search this organization's policy documents",
                    ),
                ],
            )],
            &Default::default(),
        )
    }

    #[test]
    fn a_variants_description_is_what_the_model_and_the_search_read_not_what_the_policy_judges() {
        let mut catalog = catalog();
        let digest = catalog
            .get("support__search_knowledge")
            .unwrap()
            .definition_digest()
            .to_owned();
        let index = ToolIndex::build(catalog.tools()).unwrap();
        let found = |index: &ToolIndex| index.search_where("parcel sent back", 1, &|_| true);
        assert!(
            found(&index).is_empty(),
            "no word of the request is in the servers' own words"
        );
        catalog.describe(&BTreeMap::from([(
            "support__search_knowledge".to_owned(),
            "How long a parcel may be sent back".to_owned(),
        )]));
        let t = catalog.get("support__search_knowledge").unwrap();
        assert_eq!(
            t.spec().description,
            "[support] How long a parcel may be sent back"
        );
        assert_eq!(t.definition_digest(), digest);
        let index = ToolIndex::build(catalog.tools()).unwrap();
        let hits = found(&index);
        assert_eq!(
            hits.first().map(|h| h.name.as_str()),
            Some("support__search_knowledge")
        );
        // Back to the servers' own.
        catalog.describe(&BTreeMap::new());
        let t = catalog.get("support__search_knowledge").unwrap();
        assert_eq!(
            t.spec().description,
            "[support] Search this organization's policy documents"
        );
    }
}
