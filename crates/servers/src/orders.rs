//! `orders`: Larkfield's order desk. `get_order_status` answers with structured content, a
//! text copy, and a `resource_link` to the full record (`orders://A-1002`), readable with
//! `resources/read`. `export_report` is the long call: it reports progress at least every
//! 5% and stops promptly when cancelled. For a client that declares the tasks extension it
//! runs as a task (`crate::tasks`): its progress is the task's status message, and where
//! it is, its checkpoint, so that another instance goes on from there if this one stops.

use std::{sync::Arc, time::Duration};

use rmcp::{
    ErrorData,
    model::{CallToolResult, ListResourcesResult, ReadResourceResponse},
};
use serde_json::{Map, Value, json};

use crate::{
    common::{self, Caller},
    data,
    desk::{Call, Desk, Done, Failure, Parts, Profile, Ran},
    tasks::{Job, Leg, TaskMode, Tasks, Watch},
};

/// What the orders server tells a client about itself at discovery.
pub const INSTRUCTIONS: &str = "Larkfield's orders: status, delivery dates and items of each order, and reports over order lines.";
/// Rows `export_report` builds between two looks at cancellation and progress.
pub const EXPORT_CHUNK_ROWS: usize = 500;
/// What one row costs to build, to make the report take a realistic while.
pub const EXPORT_ROW_COST: Duration = Duration::from_micros(50);
/// Progress is reported at least this often, as a share of the rows.
pub const PROGRESS_EVERY_PERCENT: usize = 5;
/// The most rows `export_report` builds.
pub const MAX_EXPORT_ROWS: i64 = 100_000;

#[derive(Clone)]
/// The orders server: Larkfield's orders, read at start from the embedded data.
pub struct OrdersServer {
    orders: Arc<Vec<Map<String, Value>>>,
    parts: Parts,
    /// Where `export_report` runs as a task, when the server has a task store.
    tasks: Option<Tasks>,
}

fn uri_of(order_id: &str) -> String {
    format!("orders://{order_id}")
}

impl OrdersServer {
    /// An orders server whose requests act as `caller` unless the HTTP layer says who is calling.
    pub fn new(caller: Caller) -> anyhow::Result<Self> {
        let orders: Vec<Map<String, Value>> = serde_json::from_str(
            data::file("data/orders/orders.json")
                .ok_or_else(|| anyhow::anyhow!("no orders file"))?,
        )?;
        Ok(OrdersServer {
            orders: Arc::new(orders),
            parts: Parts::new(
                "orders",
                "orders",
                "1.0.0",
                &["get_order_status", "export_report"],
                caller,
            ),
            tasks: None,
        })
    }

    /// The same server, running `export_report` as a task in `tasks` for clients that
    /// declare the extension.
    pub fn with_tasks(mut self, tasks: Tasks) -> Self {
        self.tasks = Some(tasks);
        self
    }

    fn find(&self, order_id: &str) -> Option<&Map<String, Value>> {
        self.orders
            .iter()
            .find(|o| o.get("order_id").and_then(Value::as_str) == Some(order_id))
    }

    fn get_order_status(&self, args: &Map<String, Value>) -> Result<CallToolResult, Failure> {
        common::no_unknown_args(args, &["order_id"])?;
        let id = common::string_arg(args, "order_id", 6, 6)?;
        let valid = id.starts_with("A-") && id[2..].bytes().all(|b| b.is_ascii_digit());
        if !valid {
            return Err(Failure::InvalidArguments(format!(
                "invalid arguments: \"order_id\" must look like A-1002, not {id:?}"
            )));
        }
        let order = self
            .find(&id)
            .ok_or_else(|| Failure::NotFound(format!("there is no order {id}")))?;
        let status = json!({
            "order_id": id,
            "status": order["status"],
            "eta": order["eta"],
            "items": order["items"],
        });
        let names: Vec<&str> = order["items"]
            .as_array()
            .map(|items| items.iter().filter_map(|i| i["name"].as_str()).collect())
            .unwrap_or_default();
        let summary = format!(
            "{id}: {}, {}, {} {}",
            names.join(", "),
            order["status"].as_str().unwrap_or("?"),
            if order["status"] == "delivered" {
                "delivered on"
            } else {
                "arrives"
            },
            order["eta"].as_str().unwrap_or("?")
        );
        let mut result: CallToolResult = serde_json::from_value(json!({
            "resultType": "complete",
            "content": [
                {"type": "text", "text": summary},
                {"type": "text", "text": status.to_string()},
                {"type": "resource_link", "uri": uri_of(&id), "name": format!("Order {id}"),
                 "mimeType": "application/json", "description": "The full order record: customer, items, carrier and tracking."}
            ],
            "structuredContent": status,
            "isError": false,
        }))
        .map_err(|e| Failure::Unavailable(format!("internal: {e}")))?;
        result.meta = Some(common::server_meta(&self.parts.info));
        Ok(result)
    }

    /// Check `export_report`'s arguments: the number of rows.
    fn export_rows(args: &Map<String, Value>) -> Result<usize, Failure> {
        common::no_unknown_args(args, &["rows"])?;
        let rows = common::int_arg(args, "rows", 0, 1, MAX_EXPORT_ROWS)?;
        if rows == 0 {
            return Err(Failure::InvalidArguments(
                "invalid arguments: \"rows\" is required".into(),
            ));
        }
        Ok(rows as usize)
    }

    /// Build the report, from `from` (a task's checkpoint) on, telling `watch` how far it
    /// is after each chunk and stopping when it is cancelled.
    async fn export_report(
        &self,
        rows: usize,
        from: Export,
        watch: Watch<'_>,
    ) -> Result<Value, Failure> {
        let lines: Vec<(&str, &Value)> = self
            .orders
            .iter()
            .flat_map(|o| {
                let id = o["order_id"].as_str().unwrap_or("?");
                o["items"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .map(move |i| (id, i))
            })
            .collect();
        let step = (rows * PROGRESS_EVERY_PERCENT / 100).clamp(1, EXPORT_CHUNK_ROWS);
        let mut export = from;
        while export.done < rows {
            let n = step.min(rows - export.done);
            for k in export.done..export.done + n {
                let (id, item) = lines[k % lines.len()];
                let value = item["unit_price"].as_f64().unwrap_or(0.0)
                    * item["quantity"].as_f64().unwrap_or(1.0);
                export.total_value += value;
                if export.preview.len() < 5 {
                    export.preview.push(format!(
                        "{id},{},{},{value:.2}",
                        item["sku"].as_str().unwrap_or(""),
                        item["quantity"]
                    ));
                }
            }
            tokio::select! {
                _ = watch.cancelled() => {
                    common::log_line(json!({"ts": common::timestamp(), "event": "cancelled", "tool": "export_report", "rows_done": export.done, "rows": rows}));
                    return Err(Failure::Cancelled);
                }
                _ = tokio::time::sleep(EXPORT_ROW_COST * n as u32) => {}
            }
            export.done += n;
            let checkpoint = serde_json::to_value(&export).ok();
            let (done, message) = (export.done, format!("{} of {rows} rows", export.done));
            watch
                .report(done as f64, rows as f64, &message, checkpoint)
                .await;
        }
        Ok(json!({
            "rows": rows,
            "columns": ["order_id", "sku", "quantity", "value"],
            "total_value": (export.total_value * 100.0).round() / 100.0,
            "preview": export.preview,
        }))
    }

    /// `export_report` run as a task: from its checkpoint when a leg is run again.
    async fn export_task(&self, job: &Job) -> Leg {
        let rows = match Self::export_rows(&job.args) {
            Ok(rows) => rows,
            Err(failure) => return failure.into_leg(&self.parts.info),
        };
        let from = job
            .checkpoint
            .clone()
            .and_then(|c| serde_json::from_value::<Export>(c).ok())
            .filter(|e| e.done <= rows)
            .unwrap_or_default();
        if from.done > 0 {
            common::log_line(
                json!({"ts": common::timestamp(), "event": "export_resumed", "rows_done": from.done, "rows": rows}),
            );
        }
        match self
            .export_report(rows, from, Watch::Task(&job.control))
            .await
        {
            Ok(value) => Leg::Done(common::structured_result(value, &self.parts.info)),
            Err(failure) => failure.into_leg(&self.parts.info),
        }
    }
}

/// How far a report is: what a task's checkpoint keeps.
#[derive(Debug, Default, Clone, serde::Serialize, serde::Deserialize)]
pub struct Export {
    done: usize,
    total_value: f64,
    preview: Vec<String>,
}

impl Desk for OrdersServer {
    const PROFILE: Profile = Profile::new("orders", INSTRUCTIONS).with_resources();

    fn parts(&self) -> &Parts {
        &self.parts
    }

    async fn run(&self, call: Call<'_>) -> Result<Done, Failure> {
        let ran = match call.name {
            "get_order_status" => Ran::Result(self.get_order_status(&call.args)?),
            _ => {
                let rows = Self::export_rows(&call.args)?;
                let watch = Watch::Call(call.context);
                Ran::Value(self.export_report(rows, Export::default(), watch).await?)
            }
        };
        Ok(Done {
            ran,
            extra: json!({}),
        })
    }

    fn tasks(&self) -> Option<&Tasks> {
        self.tasks.as_ref()
    }

    fn task_mode(&self, tool: &str) -> TaskMode {
        match tool {
            "export_report" => TaskMode::Optional,
            _ => TaskMode::Never,
        }
    }

    fn check_task(&self, call: &Call<'_>) -> Result<(), Failure> {
        Self::export_rows(&call.args).map(|_| ())
    }

    async fn run_task(&self, job: Job) -> Leg {
        self.export_task(&job).await
    }

    fn list_resources(&self, _caller: &Caller) -> Result<ListResourcesResult, ErrorData> {
        let resources: Vec<Value> = self
            .orders
            .iter()
            .filter_map(|o| o["order_id"].as_str())
            .map(|id| json!({"uri": uri_of(id), "name": format!("Order {id}"), "mimeType": "application/json"}))
            .collect();
        let mut result: ListResourcesResult =
            serde_json::from_value(json!({"resultType": "complete", "resources": resources}))
                .map_err(|e| ErrorData::internal_error(e.to_string(), None))?;
        result.meta = Some(common::server_meta(&self.parts.info));
        Ok(result)
    }

    fn read_resource(
        &self,
        _caller: &Caller,
        uri: &str,
    ) -> Result<ReadResourceResponse, ErrorData> {
        let Some(order) = uri.strip_prefix("orders://").and_then(|id| self.find(id)) else {
            return Err(ErrorData::resource_not_found(
                format!("no order at {uri}"),
                Some(json!({"uri": uri})),
            ));
        };
        let mut result: rmcp::model::ReadResourceResult = serde_json::from_value(json!({
            "resultType": "complete",
            "contents": [{"uri": uri, "mimeType": "application/json",
                          "text": serde_json::to_string_pretty(order).unwrap_or_default()}]
        }))
        .map_err(|e| ErrorData::internal_error(e.to_string(), None))?;
        result.meta = Some(common::server_meta(&self.parts.info));
        Ok(result.into())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn server() -> OrdersServer {
        OrdersServer::new(Caller {
            user: "usr-sam".into(),
            tenant: "larkfield".into(),
            client: "local".into(),
        })
        .unwrap()
    }

    #[test]
    fn maya_s_order_is_processing_with_a_link_to_its_record() {
        let args = serde_json::from_value(json!({"order_id": "A-1002"})).unwrap();
        let r = server().get_order_status(&args).unwrap();
        let s = r.structured_content.unwrap();
        assert_eq!(s["status"], "processing");
        assert_eq!(s["eta"], "2026-10-18");
        assert_eq!(s["items"][0]["name"], "Air purifier");
        let link = serde_json::to_value(&r.content[2]).unwrap();
        assert_eq!(link["type"], "resource_link");
        assert_eq!(link["uri"], "orders://A-1002");
        let bad = serde_json::from_value(json!({"order_id": "B-1002"})).unwrap();
        assert!(server().get_order_status(&bad).is_err());
        let missing = serde_json::from_value(json!({"order_id": "A-9999"})).unwrap();
        assert!(server().get_order_status(&missing).unwrap_err().word() == "not_found");
    }

    #[test]
    fn there_are_enough_orders() {
        assert!(server().orders.len() >= 30);
    }
}
