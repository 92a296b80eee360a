//! What one turn offers the model, and the host's own tools that change it: the
//! definitions of each model call ([`crate::catalog::offer`]), `search_tools`, which finds
//! catalog tools and adds their definitions, a catalog tool called by name before it was
//! offered (loaded and checked like any other), the nulls an OpenAI strict schema let the
//! model give taken out again, and `read_result`, which reads on in a result that was cut.

use rmcp::model::JsonObject;
use serde_json::{Value, json};

use super::{Ended, Turn};
use crate::{
    catalog::{
        CatalogTool, HOST_LABEL, READ_RESULT, ToolSpec,
        offer::{Loaded, Offer},
        search::{self, Answer, Closest},
    },
    config::SchemaDialect,
    dialect,
    model::ToolCall,
    trace::{Outcome, Who},
};

/// Most characters of a found tool's description in `search_tools`' answer.
pub const FOUND_DESCRIPTION_CHARS: usize = 240;

/// The id a cut result of call `no` is kept under.
pub(super) fn result_id(no: u64) -> String {
    format!("r{no}")
}

/// A description's first sentence (or its first line), clipped.
fn first_sentence(text: &str) -> String {
    let text = text.trim();
    let line = text.lines().next().unwrap_or("");
    let end = line.find(". ").map_or(line.len(), |i| i + 1);
    crate::text::clip(&line[..end], FOUND_DESCRIPTION_CHARS).into_owned()
}

impl Turn<'_> {
    /// Decide what this turn's model calls carry, for a model named `model`.
    pub(super) fn begin_offer(&mut self, model: &str) {
        let host = self.host;
        let dialect = host.settings().schema_dialect.for_model(model);
        let catalog = host.catalog();
        let mut offer = Offer::new(&catalog, host.settings(), dialect);
        if offer.deferred && self.state.number == 1 {
            let bytes = offer.bytes(&catalog);
            let always = catalog.tools().iter().filter(|t| t.always_load).count();
            host.trace().add(
                Who::Host,
                format!(
                    "the definitions of {} tools ({} bytes) pass the tool budget ({} bytes): the model is offered search_tools, {always} tool{} always loaded ({bytes} bytes) and what it finds",
                    catalog.len(),
                    offer.catalog_bytes,
                    offer.budget,
                    if always == 1 { "" } else { "s" }
                ),
                json!({"tools": catalog.len(), "catalog_bytes": offer.catalog_bytes,
                       "budget": offer.budget, "offered_bytes": bytes, "always_loaded": always}),
            );
        }
        drop(catalog);
        self.state.offer = Some(offer);
    }

    /// The definitions of the next model call.
    pub(super) fn offered(&self) -> Vec<ToolSpec> {
        let catalog = self.host.catalog();
        let mut tools = match &self.state.offer {
            Some(offer) => offer.tools(&catalog),
            None => catalog.model_tools(),
        };
        crate::policy::offered(&mut tools, self.host.settings());
        tools
    }

    /// The call with the nulls an OpenAI strict schema let the model give for optional
    /// properties taken out, when the model's dialect is that and there were any.
    pub(super) fn restored(&self, call: &ToolCall) -> Option<ToolCall> {
        let offer = self.state.offer.as_ref()?;
        if offer.dialect != SchemaDialect::OpenAiStrict {
            return None;
        }
        let schema = self
            .host
            .catalog()
            .get(&call.name)?
            .tool
            .input_schema
            .clone();
        let mut arguments: Value = serde_json::from_str(&call.arguments).ok()?;
        let before = arguments.clone();
        dialect::restore_arguments(&mut arguments, &schema);
        (arguments != before).then(|| ToolCall {
            arguments: arguments.to_string(),
            ..call.clone()
        })
    }

    /// A catalog tool the model called by name before it was offered: its definition is
    /// added to the following calls (within the budget), and the run says so.
    pub(super) fn offer_called(&mut self, tool: &CatalogTool) {
        let catalog = self.host.catalog();
        let Some(offer) = self.state.offer.as_mut() else {
            return;
        };
        if !offer.deferred || offer.is_offered(&catalog, &tool.name) {
            return;
        }
        let loaded = offer.load(&catalog, [tool.name.as_str()], false);
        drop(catalog);
        let text = if loaded.added.is_empty() {
            format!(
                "{} was called by name before it was offered; the tool budget is full, so its definition is not added",
                tool.name
            )
        } else {
            format!(
                "{} was called by name before it was offered: its definition is added to the following model calls",
                tool.name
            )
        };
        // Routine once a catalog is past its budget: kept, shown with -v only.
        self.host.trace().add_detail(
            Who::Host,
            text,
            json!({"tool": tool.name, "loaded": !loaded.added.is_empty()}),
        );
    }

    /// The host's `search_tools`: the catalog's best matches for the query, their
    /// definitions added to the following model calls as far as the budget allows.
    pub(super) fn search_tools(&mut self, call: &ToolCall, arguments: &JsonObject) -> Ended {
        let query = arguments.get("query").and_then(Value::as_str).unwrap_or("");
        let limit = arguments
            .get("limit")
            .and_then(Value::as_u64)
            .map_or(search::DEFAULT_SEARCH_LIMIT, |l| l as usize);
        let rules = &self.host.settings().rules;
        // A tool a rule hides is not found either: it is left out before the ranking, so
        // it takes no place of the results and is not the fit the others are measured by.
        let shown = |name: &str| rules.hiding(name).is_none();
        let found = match self.host.live().search(query, limit, &shown) {
            Ok(Answer::Found(found)) => found,
            Ok(Answer::NothingGood { coverage, closest }) => {
                return self.nothing_good(call, query, coverage, &closest);
            }
            Err(e) => {
                let text = format!("the tool index could not be built: {e}");
                self.host
                    .trace()
                    .add(Who::Host, text.clone(), json!({"error": e}));
                return self.ended(call, &text, Outcome::Error, HOST_LABEL);
            }
        };
        let catalog = self.host.catalog();
        let names: Vec<&str> = found.iter().map(|f| f.name.as_str()).collect();
        let loaded = match self.state.offer.as_mut() {
            Some(offer) if offer.deferred => offer.load(&catalog, names.iter().copied(), false),
            _ => Loaded {
                already: names.iter().map(|n| (*n).to_owned()).collect(),
                ..Loaded::default()
            },
        };
        let tools: Vec<Value> = found
            .iter()
            .filter_map(|f| catalog.get(&f.name))
            .map(|t| {
                json!({"name": t.name, "server": t.origin.label(),
                       "description": first_sentence(t.tool.description.as_deref().unwrap_or(""))})
            })
            .collect();
        let bytes = self.state.offer.as_mut().map(|o| o.bytes(&catalog));
        drop(catalog);
        self.report_search(query, &names, &loaded, bytes);
        let value = json!({
            "query": query,
            "tools": tools,
            "note": search_note(&loaded, tools.is_empty()),
        });
        let shown =
            crate::result::success(&call.name, &value, self.host.settings().max_result_chars);
        Ended::plain(shown, Outcome::Ok, HOST_LABEL)
    }

    /// `search_tools` found nothing that fits the query well: it says so, and names the
    /// servers that came closest with their tools, so the model can search again in other
    /// words or call one by name; no definition is added.
    fn nothing_good(
        &mut self,
        call: &ToolCall,
        query: &str,
        coverage: f64,
        closest: &[Closest],
    ) -> Ended {
        let closest: Vec<Value> = closest
            .iter()
            .map(|c| json!({"server": c.server, "tools": c.tools}))
            .collect();
        self.host.trace().add(
            Who::Host,
            format!("search_tools found nothing that fits {query:?} well"),
            json!({"found": [], "coverage": coverage, "closest": closest}),
        );
        let note = if closest.is_empty() {
            search_note(&Loaded::default(), true)
        } else {
            format!(
                "No tool fits this well: the best covers about {}% of what was asked. The servers that come closest and their tools are listed; call one by name if it does what you need, search again in other words, or tell the person that no tool here does it.",
                (coverage * 100.0).round()
            )
        };
        let value = json!({
            "query": query,
            "tools": [],
            "nothing_fits": true,
            "closest": closest,
            "note": note,
        });
        let shown =
            crate::result::success(&call.name, &value, self.host.settings().max_result_chars);
        Ended::plain(shown, Outcome::Ok, HOST_LABEL)
    }

    fn report_search(&self, query: &str, names: &[&str], loaded: &Loaded, bytes: Option<usize>) {
        let added = if loaded.added.is_empty() {
            String::new()
        } else {
            format!("; definitions added: {}", loaded.added.join(", "))
        };
        self.host.trace().add(
            Who::Host,
            format!(
                "search_tools found {} tools for {query:?}{added}",
                names.len()
            ),
            json!({"found": names, "added": loaded.added, "over_budget": loaded.over_budget,
                   "offered_bytes": bytes}),
        );
    }

    /// The host's `read_result`: the next part of a result of this turn that was cut.
    pub(super) fn read_result(&mut self, call: &ToolCall, arguments: &JsonObject) -> Ended {
        let id = arguments.get("id").and_then(Value::as_str).unwrap_or("");
        let offset = arguments.get("offset").and_then(Value::as_u64).unwrap_or(0);
        let max = self.host.settings().max_result_chars;
        let offset = usize::try_from(offset).unwrap_or(usize::MAX);
        match self.state.kept.read(&call.name, id, offset, max) {
            Ok(shown) => {
                self.host.trace().add(
                    Who::Host,
                    format!(
                        "read_result: {} characters of {id} from {offset}",
                        shown.chars
                    ),
                    json!({"id": id, "offset": offset, "clipped": shown.clipped}),
                );
                Ended::plain(shown, Outcome::Ok, HOST_LABEL)
            }
            Err(why) => {
                self.host.trace().add(
                    Who::Host,
                    format!("refused: {why}"),
                    json!({"decision": "not_kept", "id": id}),
                );
                self.ended(call, &why, Outcome::Refused, HOST_LABEL)
            }
        }
    }

    /// Keep a cut result for `read_result`, and offer `read_result` from now on.
    pub(super) fn keep(&mut self, id: String, whole: String) {
        self.state.kept.keep(id, whole);
        let catalog = self.host.catalog();
        if let Some(offer) = self.state.offer.as_mut() {
            offer.load(&catalog, [READ_RESULT], true);
        }
    }
}

/// What `search_tools` tells the model about the definitions it found.
fn search_note(loaded: &Loaded, none: bool) -> String {
    if none {
        return "No tool matches; try other words, or what the tool would do.".into();
    }
    let mut note = String::from("Call these tools by name");
    if !loaded.added.is_empty() {
        note.push_str("; their definitions are added to your tools from your next step on");
    }
    if !loaded.over_budget.is_empty() {
        note.push_str(&format!(
            ". The tool budget is full, so the definitions of {} are not added: call them by name with arguments as their description says; a call that does not fit is refused with the reason",
            loaded.over_budget.join(", ")
        ));
    }
    note.push('.');
    note
}
