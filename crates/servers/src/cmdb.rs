//! `cmdb`: the configuration database of the hosts that run the support platform — who
//! owns each host, what runs on it, where it lives. Read-only, in SQLite built at start.

use std::sync::{Arc, Mutex};

use rmcp::{
    ErrorData, RoleServer, ServerHandler,
    model::{
        CallToolRequestParams, CallToolResponse, Implementation, ListToolsResult,
        PaginatedRequestParams, ProtocolVersion, ServerCapabilities, ServerConfig, Tool,
    },
    service::RequestContext,
};
use rusqlite::{Connection, params_from_iter, types::Value as SqlValue};
use serde_json::{Map, Value, json};

use crate::{
    common::{self, Caller, RequestLog},
    data,
};

pub const INSTRUCTIONS: &str = "The configuration database (CMDB) of the support platform's hosts: owner, service, environment, address and criticality of each. Look hosts up by exact hostname; list them by service and environment.";
/// Hosts returned by `find_assets`: default and most.
pub const DEFAULT_FIND_LIMIT: i64 = 10;
pub const MAX_FIND_LIMIT: i64 = 50;

const COLUMNS: [&str; 9] = [
    "hostname",
    "service",
    "env",
    "owner_name",
    "owner_email",
    "os",
    "ip",
    "criticality",
    "last_seen",
];

/// Build the CMDB in memory from the embedded hosts file.
pub fn build_database() -> anyhow::Result<Connection> {
    let db = Connection::open_in_memory()?;
    db.execute_batch(&format!(
        "CREATE TABLE hosts ({}, PRIMARY KEY (hostname))",
        COLUMNS.map(|c| format!("{c} TEXT NOT NULL")).join(", ")
    ))?;
    let hosts: Vec<Map<String, Value>> = serde_json::from_str(
        data::file("data/cmdb/hosts.json").ok_or_else(|| anyhow::anyhow!("no hosts file"))?,
    )?;
    for h in hosts {
        let values: Vec<String> = COLUMNS
            .iter()
            .map(|c| {
                h.get(*c)
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_owned()
            })
            .collect();
        db.execute(
            &format!("INSERT INTO hosts VALUES ({})", ["?"; 9].join(", ")),
            params_from_iter(values),
        )?;
    }
    Ok(db)
}

#[derive(Clone)]
pub struct CmdbServer {
    db: Arc<Mutex<Connection>>,
    /// The caller when a request names none: the one this server was started for (stdio).
    caller: Caller,
    info: Implementation,
    tools: Arc<Vec<Tool>>,
}

fn row_to_json(row: &rusqlite::Row) -> rusqlite::Result<Value> {
    let mut m = Map::new();
    for (i, c) in COLUMNS.iter().enumerate() {
        m.insert((*c).into(), Value::String(row.get(i)?));
    }
    Ok(Value::Object(m))
}

impl CmdbServer {
    pub fn new(caller: Caller) -> anyhow::Result<Self> {
        let tools = ["get_asset", "find_assets"]
            .iter()
            .map(|n| {
                common::tool_from_json(
                    data::file(&format!("tools/cmdb.{n}.json")).expect("tool file embedded"),
                )
            })
            .collect();
        Ok(CmdbServer {
            db: Arc::new(Mutex::new(build_database()?)),
            caller,
            info: Implementation::new("cmdb", "1.0.0"),
            tools: Arc::new(tools),
        })
    }

    fn get_asset(&self, args: &Map<String, Value>) -> Result<Value, String> {
        common::no_unknown_args(args, &["hostname"])?;
        let hostname = common::string_arg(args, "hostname", 1, 253)?;
        let db = self.db.lock().unwrap_or_else(|e| e.into_inner());
        db.query_row(
            &format!("SELECT {} FROM hosts WHERE hostname = ?1", COLUMNS.join(", ")),
            [&hostname],
            row_to_json,
        )
        .map_err(|_| format!("not_found: there is no host named {hostname:?} in the CMDB; hostnames must match exactly (for example jump-prod-02)"))
    }

    fn find_assets(&self, args: &Map<String, Value>) -> Result<Value, String> {
        common::no_unknown_args(args, &["service", "env", "limit"])?;
        let limit = common::int_arg(args, "limit", DEFAULT_FIND_LIMIT, 1, MAX_FIND_LIMIT)?;
        let mut filters = Vec::new();
        let mut values: Vec<SqlValue> = Vec::new();
        for key in ["service", "env"] {
            if args.get(key).is_some_and(|v| !v.is_null()) {
                values.push(SqlValue::Text(common::string_arg(args, key, 1, 100)?));
                filters.push(format!("{key} = ?{}", values.len()));
            }
        }
        if let Some(env) = args.get("env").and_then(Value::as_str)
            && !["prod", "staging", "dev"].contains(&env)
        {
            return Err(format!(
                "invalid arguments: \"env\" must be prod, staging or dev, not {env:?}"
            ));
        }
        let filter = if filters.is_empty() {
            String::new()
        } else {
            format!("WHERE {}", filters.join(" AND "))
        };
        let db = self.db.lock().unwrap_or_else(|e| e.into_inner());
        let total: i64 = db
            .query_row(
                &format!("SELECT count(*) FROM hosts {filter}"),
                params_from_iter(values.iter()),
                |r| r.get(0),
            )
            .map_err(|e| format!("lookup failed: {e}"))?;
        let mut stmt = db
            .prepare(&format!(
                "SELECT {} FROM hosts {filter} ORDER BY hostname LIMIT {limit}",
                COLUMNS.join(", ")
            ))
            .map_err(|e| format!("lookup failed: {e}"))?;
        let assets: Vec<Value> = stmt
            .query_map(params_from_iter(values.iter()), row_to_json)
            .map_err(|e| format!("lookup failed: {e}"))?
            .collect::<Result<_, _>>()
            .map_err(|e| format!("lookup failed: {e}"))?;
        Ok(json!({"total": total, "assets": assets}))
    }

    fn log(
        &self,
        caller: &Caller,
        tool: &str,
        outcome: &str,
        extra: Value,
        start: std::time::Instant,
    ) {
        let mut record = json!({
            "ts": common::timestamp(), "event": "tool_call", "user": caller.user,
            "client": caller.client, "tool": tool, "outcome": outcome,
        });
        if let (Some(obj), Value::Object(more)) = (record.as_object_mut(), extra) {
            obj.extend(more);
        }
        record["ms"] = json!(common::elapsed_ms(start));
        common::log_line(record);
    }
}

impl ServerHandler for CmdbServer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(self.info.clone())
            .with_instructions(INSTRUCTIONS)
    }

    fn supported_protocol_versions(&self) -> std::borrow::Cow<'static, [ProtocolVersion]> {
        std::borrow::Cow::Borrowed(ProtocolVersion::KNOWN_VERSIONS)
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(common::tool_list(
            "cmdb",
            &self.tools,
            &self.info,
            &context.meta,
        ))
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        common::find_tool(&self.tools, name)
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let log = RequestLog::start("cmdb", "tools/call", Some(&request.name), &context.meta);
        let start = std::time::Instant::now();
        let caller = Caller::of_request(&self.caller, &context);
        let args = common::arguments(request.arguments.as_ref());
        let name = request.name.to_string();
        let outcome = match name.as_str() {
            "get_asset" => self.get_asset(&args).map(|v| (v, json!({}))),
            "find_assets" => self.find_assets(&args).map(|v| {
                let n = v["assets"].as_array().map_or(0, Vec::len);
                (v, json!({"results": n}))
            }),
            other => {
                let e = Err(ErrorData::invalid_params(
                    format!("unknown tool: {other}"),
                    None,
                ));
                log.finish("error");
                return e;
            }
        };
        let response: Result<CallToolResponse, ErrorData> = Ok(match outcome {
            Ok((value, extra)) => {
                self.log(&caller, &name, "ok", extra, start);
                common::structured_result(value, &self.info).into()
            }
            Err(e) => {
                let word = if e.starts_with("not_found") {
                    "not_found"
                } else {
                    "invalid_arguments"
                };
                self.log(&caller, &name, word, json!({}), start);
                common::tool_error(e, &self.info).into()
            }
        });
        log.finish(common::call_outcome(&response));
        response
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn server() -> CmdbServer {
        CmdbServer::new(Caller {
            user: "usr-sam".into(),
            tenant: String::new(),
            client: "local".into(),
        })
        .unwrap()
    }

    fn args(v: Value) -> Map<String, Value> {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn jump_prod_02_belongs_to_camille() {
        let a = server()
            .get_asset(&args(json!({"hostname": "jump-prod-02"})))
            .unwrap();
        assert_eq!(a["owner_name"], "Camille Michel");
        assert_eq!(a["service"], "remote-access");
        assert_eq!(a["env"], "prod");
        assert!(
            server()
                .get_asset(&args(json!({"hostname": "JUMP-PROD-02"})))
                .unwrap_err()
                .starts_with("not_found")
        );
    }

    #[test]
    fn find_filters_counts_and_limits() {
        let s = server();
        let all = s.find_assets(&args(json!({"limit": 50}))).unwrap();
        assert!(all["total"].as_i64().unwrap() >= 40);
        let dbs = s
            .find_assets(&args(json!({"service": "customer-db", "limit": 2})))
            .unwrap();
        assert!(dbs["total"].as_i64().unwrap() >= 3);
        assert_eq!(dbs["assets"].as_array().unwrap().len(), 2);
        let prod = s
            .find_assets(&args(json!({"service": "customer-db", "env": "prod"})))
            .unwrap();
        assert!(
            prod["assets"]
                .as_array()
                .unwrap()
                .iter()
                .all(|a| a["env"] == "prod")
        );
        assert!(s.find_assets(&args(json!({"limit": 51}))).is_err());
        assert!(s.find_assets(&args(json!({"env": "qa"}))).is_err());
        assert!(s.find_assets(&args(json!({"colour": "red"}))).is_err());
    }

    #[test]
    fn tool_definitions_parse_and_keep_their_output_schemas() {
        for t in server().tools.iter() {
            assert!(t.output_schema.is_some(), "{}", t.name);
        }
    }
}
