//! The model as an eval sees it: every decision passed through, counted (model calls, the
//! bytes of the definitions each call carried: the catalog's cost), with a variant's tool
//! descriptions put in place of the servers' before the model reads them.

use std::collections::BTreeMap;

use crate::{
    catalog::ToolSpec,
    model::{Decided, Message, Model},
};

/// A model behind a lens.
pub struct Lens<'m> {
    inner: &'m mut dyn Model,
    descriptions: &'m BTreeMap<String, String>,
    /// Model calls made through it.
    pub calls: u64,
    /// Bytes of the definitions those calls carried, in all.
    pub definition_bytes: u64,
}

impl<'m> Lens<'m> {
    /// `inner`, reading `descriptions` (by tool name) instead of the servers' own.
    pub fn new(inner: &'m mut dyn Model, descriptions: &'m BTreeMap<String, String>) -> Self {
        Lens {
            inner,
            descriptions,
            calls: 0,
            definition_bytes: 0,
        }
    }
}

/// `tools` with the descriptions of `instead` in place, keeping the `[server] ` the host
/// puts before each (so a variant changes only the server's words).
pub fn described(tools: &[ToolSpec], instead: &BTreeMap<String, String>) -> Vec<ToolSpec> {
    tools
        .iter()
        .map(|t| match instead.get(&t.name) {
            None => t.clone(),
            Some(text) => {
                let prefix = match t.description.split_once("] ") {
                    Some((server, _)) if t.description.starts_with('[') => {
                        format!("{server}] ")
                    }
                    _ => String::new(),
                };
                ToolSpec {
                    description: format!("{prefix}{text}"),
                    ..t.clone()
                }
            }
        })
        .collect()
}

impl Model for Lens<'_> {
    fn name(&self) -> String {
        self.inner.name()
    }

    fn decide<'a>(&'a mut self, messages: &'a [Message], tools: &'a [ToolSpec]) -> Decided<'a> {
        Box::pin(async move {
            let tools = if self.descriptions.is_empty() {
                tools.to_vec()
            } else {
                described(tools, self.descriptions)
            };
            self.calls += 1;
            self.definition_bytes += tools.iter().map(|t| t.request_bytes() as u64).sum::<u64>();
            self.inner.decide(messages, &tools).await
        })
    }

    fn preflight<'a>(
        &'a mut self,
    ) -> futures::future::BoxFuture<'a, Result<(), crate::model::ModelError>> {
        self.inner.preflight()
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;

    fn tool(name: &str, description: &str) -> ToolSpec {
        ToolSpec {
            name: name.into(),
            description: description.into(),
            parameters: Arc::new(serde_json::Map::new()),
            strict: false,
        }
    }

    #[test]
    fn a_variant_changes_only_the_servers_words_of_the_tools_it_names() {
        let tools = [
            tool("support__get_ticket", "[support] Read one ticket"),
            tool("support__search_knowledge", "[support] Search"),
        ];
        let instead = BTreeMap::from([(
            "support__get_ticket".to_owned(),
            "Fetch a ticket by id".to_owned(),
        )]);
        let seen = described(&tools, &instead);
        assert_eq!(seen[0].description, "[support] Fetch a ticket by id");
        assert_eq!(seen[1].description, "[support] Search");
        assert_eq!(seen[0].name, "support__get_ticket");
    }
}
