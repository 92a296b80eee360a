//! `cmdb`: the configuration database of the hosts that run the support platform — who
//! owns each host, what runs on it, where it lives. Read-only, in SQLite built at start.

use std::sync::{Arc, Mutex};

use rusqlite::{Connection, params_from_iter, types::Value as SqlValue};
use serde_json::{Map, Value, json};

use crate::{
    common::{self, Caller},
    data,
    desk::{Call, Desk, Done, Failure, Parts, Profile, Ran},
};

/// What the CMDB tells a client about itself at discovery.
pub const INSTRUCTIONS: &str = "The configuration database (CMDB) of the support platform's hosts: owner, service, environment, address and criticality of each. Look hosts up by exact hostname; list them by service and environment.";
/// Hosts returned by `find_assets`: default and most.
pub const DEFAULT_FIND_LIMIT: i64 = 10;
/// The most hosts `find_assets` returns.
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
/// The CMDB server: its database, built at start from the embedded hosts file.
pub struct CmdbServer {
    db: Arc<Mutex<Connection>>,
    parts: Parts,
}

fn row_to_json(row: &rusqlite::Row) -> rusqlite::Result<Value> {
    let mut m = Map::new();
    for (i, c) in COLUMNS.iter().enumerate() {
        m.insert((*c).into(), Value::String(row.get(i)?));
    }
    Ok(Value::Object(m))
}

impl CmdbServer {
    /// A CMDB whose requests act as `caller` unless the HTTP layer says who is calling.
    pub fn new(caller: Caller) -> anyhow::Result<Self> {
        Ok(CmdbServer {
            db: Arc::new(Mutex::new(build_database()?)),
            parts: Parts::new(
                "cmdb",
                "cmdb",
                "1.0.0",
                &["get_asset", "find_assets"],
                caller,
            ),
        })
    }

    fn get_asset(&self, args: &Map<String, Value>) -> Result<Value, Failure> {
        common::no_unknown_args(args, &["hostname"])?;
        let hostname = common::string_arg(args, "hostname", 1, 253)?;
        let db = self.db.lock().unwrap_or_else(|e| e.into_inner());
        db.query_row(
            &format!("SELECT {} FROM hosts WHERE hostname = ?1", COLUMNS.join(", ")),
            [&hostname],
            row_to_json,
        )
        .map_err(|_| Failure::NotFound(format!("there is no host named {hostname:?} in the CMDB; hostnames must match exactly (for example jump-prod-02)")))
    }

    fn find_assets(&self, args: &Map<String, Value>) -> Result<Value, Failure> {
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
            return Err(Failure::InvalidArguments(format!(
                "invalid arguments: \"env\" must be prod, staging or dev, not {env:?}"
            )));
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
            .map_err(|e| Failure::Unavailable(format!("lookup failed: {e}")))?;
        let mut stmt = db
            .prepare(&format!(
                "SELECT {} FROM hosts {filter} ORDER BY hostname LIMIT {limit}",
                COLUMNS.join(", ")
            ))
            .map_err(|e| Failure::Unavailable(format!("lookup failed: {e}")))?;
        let assets: Vec<Value> = stmt
            .query_map(params_from_iter(values.iter()), row_to_json)
            .map_err(|e| Failure::Unavailable(format!("lookup failed: {e}")))?
            .collect::<Result<_, _>>()
            .map_err(|e| Failure::Unavailable(format!("lookup failed: {e}")))?;
        Ok(json!({"total": total, "assets": assets}))
    }
}

impl Desk for CmdbServer {
    const PROFILE: Profile = Profile::new("cmdb", INSTRUCTIONS);

    fn parts(&self) -> &Parts {
        &self.parts
    }

    async fn run(&self, call: Call<'_>) -> Result<Done, Failure> {
        if call.name == "get_asset" {
            return Ok(Done::value(self.get_asset(&call.args)?));
        }
        let found = self.find_assets(&call.args)?;
        let n = found["assets"].as_array().map_or(0, Vec::len);
        Ok(Done {
            ran: Ran::Value(found),
            extra: json!({"results": n}),
        })
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
                .word()
                == "not_found"
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
        for t in server().parts.tools.iter() {
            assert!(t.output_schema.is_some(), "{}", t.name);
        }
    }
}
