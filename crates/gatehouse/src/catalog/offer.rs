//! Which definitions one turn's model calls carry. Every tool's, while they fit the tool
//! budget (`toolBudgetBytes`); past it (or with `toolSearch: "always"`) the catalog is
//! *deferred*: the model gets the host's `search_tools`, the tools always loaded
//! (`alwaysLoad`, `read_resource`), and the tools it found or called, added for the
//! following calls of the turn as long as they fit the budget. Definitions are only ever
//! appended, so the start of the list stays the same from call to call and a provider's
//! prompt cache keeps working. `read_result` is appended once a result of the turn is kept.

use std::collections::HashMap;

use super::{Catalog, CatalogTool, SEARCH_TOOLS, ToolSpec};
use crate::config::{SchemaDialect, Settings, ToolSearch};

/// The definitions a turn offers, and what it has added so far.
#[derive(Debug, Clone)]
pub struct Offer {
    /// Is the catalog searched (`search_tools`) instead of sent whole?
    pub deferred: bool,
    /// The budget, in bytes of definitions per model call.
    pub budget: usize,
    /// Bytes of every definition, as the model would get them.
    pub catalog_bytes: usize,
    /// The schema dialect of the model's API.
    pub dialect: SchemaDialect,
    /// Added in this turn, in the order they were added.
    loaded: Vec<String>,
    /// Each definition's bytes as sent, by catalog name.
    sizes: HashMap<String, usize>,
}

/// What [`Offer::load`] did with the names it was given.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Loaded {
    /// Added to the following calls.
    pub added: Vec<String>,
    /// Already offered.
    pub already: Vec<String>,
    /// Not added: the budget is full. They can still be called by name.
    pub over_budget: Vec<String>,
}

impl Offer {
    /// The offer of a turn that begins with this catalog, for a model whose API takes
    /// `dialect`.
    pub fn new(catalog: &Catalog, settings: &Settings, dialect: SchemaDialect) -> Offer {
        let catalog_bytes = catalog.request_bytes();
        let deferred = match settings.tool_search {
            ToolSearch::Always => true,
            ToolSearch::Never => false,
            ToolSearch::Auto => catalog_bytes > settings.tool_budget_bytes,
        };
        Offer {
            deferred,
            budget: settings.tool_budget_bytes,
            catalog_bytes,
            dialect,
            loaded: Vec::new(),
            sizes: HashMap::new(),
        }
    }

    /// The tools a deferred offer always carries, before what the turn added:
    /// `search_tools`, then the always-loaded tools in the catalog's order.
    fn base<'c>(&self, catalog: &'c Catalog) -> Vec<&'c CatalogTool> {
        if !self.deferred {
            return catalog.tools().iter().collect();
        }
        catalog
            .get(SEARCH_TOOLS)
            .into_iter()
            .chain(catalog.tools().iter().filter(|t| t.always_load))
            .collect()
    }

    /// Every tool this offer carries now, in the order the model gets them.
    fn offered<'c>(&self, catalog: &'c Catalog) -> Vec<&'c CatalogTool> {
        let mut tools = self.base(catalog);
        for name in &self.loaded {
            if let Some(t) = catalog.get(name)
                && !tools.iter().any(|o| o.name == t.name)
            {
                tools.push(t);
            }
        }
        tools
    }

    /// The definitions for the next model call, in the model's schema dialect.
    pub fn tools(&self, catalog: &Catalog) -> Vec<ToolSpec> {
        self.offered(catalog)
            .into_iter()
            .map(|t| t.spec_in(self.dialect))
            .collect()
    }

    /// Bytes of the definitions the next model call carries.
    pub fn bytes(&mut self, catalog: &Catalog) -> usize {
        let tools: Vec<&CatalogTool> = self.offered(catalog);
        tools.iter().map(|t| self.size(t)).sum()
    }

    fn size(&mut self, tool: &CatalogTool) -> usize {
        let dialect = self.dialect;
        *self
            .sizes
            .entry(tool.name.clone())
            .or_insert_with(|| tool.spec_in(dialect).request_bytes())
    }

    /// Is this tool's definition in the next model call?
    pub fn is_offered(&self, catalog: &Catalog, name: &str) -> bool {
        self.offered(catalog).iter().any(|t| t.name == name)
    }

    /// Add these tools' definitions to the following calls, each while the whole still
    /// fits the budget (`force`: whatever the budget, for `read_result`).
    pub fn load<'n>(
        &mut self,
        catalog: &Catalog,
        names: impl IntoIterator<Item = &'n str>,
        force: bool,
    ) -> Loaded {
        let mut out = Loaded::default();
        let mut bytes = self.bytes(catalog);
        for name in names {
            let Some(tool) = catalog.get(name) else {
                continue;
            };
            if self.is_offered(catalog, name) {
                out.already.push(name.to_owned());
                continue;
            }
            let size = self.size(tool);
            if !force && bytes + size > self.budget {
                out.over_budget.push(name.to_owned());
                continue;
            }
            bytes += size;
            self.loaded.push(name.to_owned());
            out.added.push(name.to_owned());
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::{READ_RESULT, host_tools};
    use crate::config::name::server_name;
    use crate::config::{Pattern, ToolRules};
    use serde_json::json;

    fn catalog(n: usize) -> Catalog {
        let tools = (0..n)
            .map(|i| {
                serde_json::from_value(json!({"name": format!("tool_{i:03}"),
                    "description": format!("Tool number {i}, which does thing {i}."),
                    "inputSchema": {"type": "object", "properties": {"q": {"type": "string", "description": "x".repeat(200)}}}}))
                .unwrap()
            })
            .collect();
        let rules = HashMap::from([(
            server_name("s"),
            ToolRules {
                always_load: vec![Pattern::parse("tool_007").unwrap()],
                ..ToolRules::default()
            },
        )]);
        let mut c = Catalog::build_with(vec![(server_name("s"), tools)], &rules);
        c.add_on_demand_tool(host_tools::search_tools_tool(c.len(), &c.servers()));
        c.add_on_demand_tool(host_tools::read_result_tool());
        c
    }

    fn settings(budget: usize, search: ToolSearch) -> Settings {
        Settings {
            tool_budget_bytes: budget,
            tool_search: search,
            ..Settings::default()
        }
    }

    fn names(specs: Vec<ToolSpec>) -> Vec<String> {
        specs.into_iter().map(|s| s.name).collect()
    }

    #[test]
    fn a_catalog_within_the_budget_is_offered_whole() {
        let c = catalog(3);
        let mut offer = Offer::new(
            &c,
            &settings(16_384, ToolSearch::Auto),
            SchemaDialect::JsonSchema,
        );
        assert!(!offer.deferred);
        assert_eq!(
            names(offer.tools(&c)),
            ["s__tool_000", "s__tool_001", "s__tool_002"]
        );
        assert_eq!(offer.bytes(&c), c.request_bytes());
        // read_result joins at the end once a result is kept.
        assert_eq!(offer.load(&c, [READ_RESULT], true).added, [READ_RESULT]);
        assert_eq!(names(offer.tools(&c)).last().unwrap(), READ_RESULT);
        assert!(
            Offer::new(
                &c,
                &settings(16_384, ToolSearch::Always),
                SchemaDialect::JsonSchema
            )
            .deferred
        );
    }

    #[test]
    fn past_the_budget_the_model_gets_search_and_what_it_found_appended_within_the_budget() {
        let c = catalog(200);
        assert!(c.request_bytes() > 16_384);
        let mut offer = Offer::new(
            &c,
            &settings(4_000, ToolSearch::Auto),
            SchemaDialect::JsonSchema,
        );
        assert!(offer.deferred);
        assert_eq!(
            names(offer.tools(&c)),
            [crate::catalog::SEARCH_TOOLS, "s__tool_007"]
        );
        let first = offer.load(&c, ["s__tool_150", "s__tool_007", "s__nothing"], false);
        assert_eq!(first.added, ["s__tool_150"]);
        assert_eq!(first.already, ["s__tool_007"]);
        let second = offer.load(&c, ["s__tool_003", "s__tool_100"], false);
        assert_eq!(second.added, ["s__tool_003", "s__tool_100"]);
        // Appended in the order found: the start of the list never changes.
        assert_eq!(
            names(offer.tools(&c)),
            [
                crate::catalog::SEARCH_TOOLS,
                "s__tool_007",
                "s__tool_150",
                "s__tool_003",
                "s__tool_100"
            ]
        );
        let many: Vec<String> = (0..200).map(|i| format!("s__tool_{i:03}")).collect();
        let full = offer.load(&c, many.iter().map(String::as_str), false);
        assert!(!full.over_budget.is_empty());
        assert!(offer.bytes(&c) <= 4_000, "{}", offer.bytes(&c));
        assert!(offer.is_offered(&c, "s__tool_150") && !offer.is_offered(&c, &full.over_budget[0]));
        // read_result goes in whatever the budget.
        assert_eq!(offer.load(&c, [READ_RESULT], true).added, [READ_RESULT]);
    }
}
