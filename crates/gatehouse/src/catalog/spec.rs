//! A tool as a model gets it: name, `[server]`-prefixed description and input schema,
//! invisible characters out of both, in the model's schema dialect when it has one.

use std::sync::Arc;

use rmcp::model::JsonObject;
use serde::Serialize;

use super::CatalogTool;
use crate::config::SchemaDialect;

/// A tool in the shape chat-completion APIs take: a function with JSON Schema parameters.
#[derive(Debug, Clone, Serialize)]
pub struct ToolSpec {
    /// The name the model proposes (`server__tool`).
    pub name: String,
    /// `[server]` and the tool's description.
    pub description: String,
    /// The tool's `inputSchema`, shared with the catalog rather than copied: the tools are
    /// listed for every model call, and a large catalog's schemas are megabytes. In the
    /// model's schema dialect when it has one ([`crate::dialect`]).
    pub parameters: Arc<JsonObject>,
    /// Send it with `"strict": true` (OpenAI strict mode; the schema was made for it).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub strict: bool,
}

impl ToolSpec {
    /// Bytes of this definition in a chat-completions request:
    /// `{"type":"function","function":{name, description, parameters}}`.
    pub fn request_bytes(&self) -> usize {
        const FRAME: usize = r#"{"type":"function","function":}"#.len();
        FRAME + serde_json::to_string(self).map_or(0, |s| s.len())
    }
}

impl CatalogTool {
    /// This tool as the model sees it: name, `[server]`-prefixed description (invisible
    /// characters out, [`crate::text::uncloaked`]), and its input schema, shared with the
    /// catalog.
    pub fn spec(&self) -> ToolSpec {
        let description = crate::text::uncloaked(self.description());
        ToolSpec {
            name: self.name.clone(),
            description: format!("[{}] {description}", self.origin.label())
                .trim_end()
                .to_owned(),
            parameters: self.schema_for_model(),
            strict: false,
        }
    }

    /// The input schema as the model gets it: invisible characters out of its strings.
    fn schema_for_model(&self) -> Arc<JsonObject> {
        self.for_model
            .get_or_init(|| {
                let text = serde_json::to_string(&*self.tool.input_schema).unwrap_or_default();
                match crate::text::uncloaked(&text) {
                    std::borrow::Cow::Borrowed(_) => self.tool.input_schema.clone(),
                    std::borrow::Cow::Owned(clean) => serde_json::from_str(&clean)
                        .map(Arc::new)
                        .unwrap_or_else(|_| self.tool.input_schema.clone()),
                }
            })
            .clone()
    }

    /// This tool as a model whose API takes `dialect` gets it ([`crate::dialect`]).
    pub fn spec_in(&self, dialect: SchemaDialect) -> ToolSpec {
        let mut spec = self.spec();
        if dialect != SchemaDialect::JsonSchema {
            let (parameters, strict) =
                crate::dialect::parameters(&self.schema_for_model(), dialect);
            spec.parameters = parameters;
            spec.strict = strict;
        }
        spec
    }
}
