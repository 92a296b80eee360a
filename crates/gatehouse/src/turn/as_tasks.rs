//! The turn's part in calls run as tasks: a call whose server ran it as a task is
//! recorded (`crate::tasks`), and before the question the tasks of earlier turns that
//! have ended since are given to the model as the answers to their calls, through the
//! gate's `afterCall` and the shaper like any result.

use rmcp::model::JsonObject;
use serde_json::json;

use super::Turn;
use crate::{
    catalog::CatalogTool,
    dispatch, gate,
    model::{Message, ToolCall},
    result::ForModel,
    tasks::{self, records},
    trace::{Outcome, TaskEnded, ToolEvent},
};

impl Turn<'_> {
    /// Before the question: the calls of earlier turns that went on as tasks and have
    /// ended since. The person is told; the model reads each end as the answer to its call
    /// (a tool answer, never the person's words), and its record is joined by the call's.
    pub(super) async fn report_ended_tasks(&mut self, conversation: &mut Vec<Message>) {
        let host = self.host;
        for ended in tasks::look_again(host.looking(), self.limits()).await {
            let r = &ended.record.clone();
            let status = tasks::status_of(&ended.end, ended.seen.as_ref());
            host.trace().task_ended(&TaskEnded {
                server: r.server.clone(),
                tool: r.tool.clone(),
                task_id: r.task_id.clone(),
                status,
            });
            let ms = (records::now_ms().saturating_sub(r.started_ms)) as f64;
            let (shown, outcome) = self.shape_ended_task(ended, ms).await;
            let call_id = format!("task_{}", crate::text::head(&r.task_id, 40));
            conversation.push(Message::Assistant {
                text: None,
                tool_calls: vec![ToolCall {
                    id: call_id.clone(),
                    name: r.tool.clone(),
                    arguments: json!({"task": r.task_id}).to_string(),
                }],
            });
            host.trace().tool_event(&ToolEvent {
                session_id: host.session_id().to_owned(),
                trace_id: r.trace_id.clone(),
                step: r.step,
                server: r.server.clone(),
                tool: r.tool.clone(),
                arg_keys: Vec::new(),
                outcome,
                // Decided and asked in the turn that sent it.
                asked_user: false,
                approved_by: None,
                server_asked: false,
                ms,
                result_bytes: shown.text.len(),
                task_id: Some(r.task_id.clone()),
            });
            conversation.push(Message::Tool {
                call_id,
                name: r.tool.clone(),
                content: shown.text,
                media: shown.media,
            });
        }
    }

    /// A task's end, reported at a later turn, through the gate's `afterCall` as any
    /// call's end (with no arguments: its record keeps none) and shaped for the model;
    /// its record is kept as reported, with the end as the gate left it.
    async fn shape_ended_task(&self, ended: tasks::Ended, ms: f64) -> (ForModel, Outcome) {
        let (host, r) = (self.host, &ended.record);
        let tool = host.catalog().get(&r.tool).cloned();
        let Some(tool) = tool else {
            let now = tasks::record(
                r,
                &ended.end,
                ended.seen.as_ref(),
                true,
                host.trace().secrets(),
            );
            tasks::keep(host.tasks(), &now, host.trace());
            let why = "the task ended, but its tool is no longer offered; the person can read its end with `gatehouse tasks result ID`";
            return (self.shaper().error(&r.tool, why), Outcome::Error);
        };
        let call = ToolCall {
            id: format!("task_{}", crate::text::head(&r.task_id, 40)),
            name: r.tool.clone(),
            arguments: "{}".into(),
        };
        let proposal = gate::Proposal {
            call: &call,
            session: host.session_id(),
            trace_id: &r.trace_id,
            step: r.step,
            caller: None,
            confirmation: None,
            flows: None,
        };
        let end = host
            .gate()
            .after_call(
                &proposal,
                &tool,
                &JsonObject::new(),
                ended.end,
                host.trace(),
            )
            .await;
        let now = tasks::record(r, &end, ended.seen.as_ref(), true, host.trace().secrets());
        tasks::keep(host.tasks(), &now, host.trace());
        let stem = format!("task-{}", crate::text::head(&r.task_id, 16));
        let shaped = self.shaper().call(&r.tool, &tool, end, ms, &stem);
        (shaped.shown, shaped.outcome)
    }

    /// A call run as a task is kept, with its end as the gate left it: to report it later
    /// when it goes on, and to list it.
    pub(super) fn keep_task(
        &self,
        call: &ToolCall,
        tool: &CatalogTool,
        no: u64,
        started_ms: u64,
        seen: &dispatch::task::TaskSeen,
        end: &dispatch::CallEnd,
    ) {
        let made = tasks::Record {
            task_id: seen.id.clone(),
            server: tool.origin.label().to_owned(),
            tool: call.name.clone(),
            wire_tool: tool.tool.name.to_string(),
            session_id: self.host.session_id().to_owned(),
            trace_id: self.state.trace_id.clone(),
            step: no,
            status: String::new(),
            message: None,
            started_ms,
            updated_ms: started_ms,
            end: None,
            reported: false,
        };
        let reported = !matches!(end, dispatch::CallEnd::Background(_));
        let secrets = self.host.trace().secrets();
        let kept = tasks::record(&made, end, Some(seen), reported, secrets);
        tasks::keep(self.host.tasks(), &kept, self.host.trace());
    }
}
