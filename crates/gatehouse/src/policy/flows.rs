//! The rule of two: once untrusted text is in the context, a call of a consequential tool
//! (one the person marks so in `flows.consequential`, or that declares `destructiveHint:
//! true`) needs the person, unless every argument is the person's or a trusted result's.
//! Untrusted input, a consequential action and no person: never all three at once.
//!
//! It only turns a run into an ask: a deny stays a deny, an ask an ask. An annotation can
//! make a tool consequential, never make it not.

use crate::{
    catalog::{CatalogTool, host_tools::runs_unasked},
    config::Settings,
    flow::{Traced, Trust},
    rules::Decision,
};

use super::Basis;

/// Most arguments named in the reason; the approval lists them all.
const NAMED_ARGUMENTS: usize = 3;

/// Is `tool` consequential: marked by the person, or declared destructive by its server?
pub fn is_consequential(tool: &CatalogTool, settings: &Settings) -> bool {
    settings.flows.is_consequential(&tool.name)
        || tool
            .tool
            .annotations
            .as_ref()
            .and_then(|a| a.destructive_hint)
            .unwrap_or(false)
}

/// How far the person trusts what `tool` returns: trusted only when the person says so
/// (`flows.trusted`) and the tool does not declare it reaches an open world; an unknown
/// tool's, or the host's own, never.
pub fn result_trust(settings: &Settings, tool: Option<&CatalogTool>) -> Trust {
    let Some(tool) = tool else {
        return Trust::Untrusted;
    };
    let open_world = tool
        .tool
        .annotations
        .as_ref()
        .and_then(|a| a.open_world_hint)
        .unwrap_or(false);
    match tool.origin.server() {
        Some(server) if settings.flows.trusts(server, &tool.name) && !open_world => Trust::Trusted,
        _ => Trust::Untrusted,
    }
}

/// The policy's `decision` on `tool`, turned into an ask when the rule of two says so.
pub fn rule_of_two(
    tool: &CatalogTool,
    settings: &Settings,
    traced: Option<&Traced>,
    decision: Decision,
    basis: Basis,
) -> (Decision, Basis) {
    let Some(traced) = traced else {
        return (decision, basis);
    };
    let Some(tainted) = &traced.tainted_by else {
        return (decision, basis);
    };
    if decision != Decision::Allow
        || runs_unasked(tool)
        || traced.all_vouched()
        || !is_consequential(tool, settings)
    {
        return (decision, basis);
    }
    let unvouched = traced.unvouched();
    let mut named: Vec<String> = unvouched.iter().take(NAMED_ARGUMENTS).cloned().collect();
    if unvouched.len() > NAMED_ARGUMENTS {
        named.push(format!("and {} more", unvouched.len() - NAMED_ARGUMENTS));
    }
    if traced.cut {
        named.push("more values than the host traces".into());
    }
    let why = format!(
        "untrusted text is in the context ({}) and {} is consequential, but not every \
         argument is yours or a trusted result's: {}",
        tainted.describe(),
        tool.name,
        named.join("; ")
    );
    (
        Decision::Ask,
        Basis::Flow {
            was: basis.label(),
            why,
        },
    )
}
