//! The model as an eval sees it: every decision passed through, counted (model calls, and
//! the bytes of the definitions each call carried: the catalog's cost to the model). A
//! variant's descriptions are the catalog's to put in place ([`crate::catalog::Catalog::describe`]),
//! so `search_tools` reads them too.

use crate::{
    catalog::ToolSpec,
    model::{Decided, Message, Model},
};

/// A model behind a lens.
pub struct Lens<'m> {
    inner: &'m mut dyn Model,
    /// Model calls made through it.
    pub calls: u64,
    /// Bytes of the definitions those calls carried, in all.
    pub definition_bytes: u64,
}

impl<'m> Lens<'m> {
    /// `inner`, counted.
    pub fn new(inner: &'m mut dyn Model) -> Self {
        Lens {
            inner,
            calls: 0,
            definition_bytes: 0,
        }
    }
}

impl Model for Lens<'_> {
    fn name(&self) -> String {
        self.inner.name()
    }

    fn decide<'a>(&'a mut self, messages: &'a [Message], tools: &'a [ToolSpec]) -> Decided<'a> {
        self.calls += 1;
        self.definition_bytes += tools.iter().map(|t| t.request_bytes() as u64).sum::<u64>();
        self.inner.decide(messages, tools)
    }

    fn preflight<'a>(
        &'a mut self,
    ) -> futures::future::BoxFuture<'a, Result<(), crate::model::ModelError>> {
        self.inner.preflight()
    }
}
