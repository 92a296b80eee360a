//! What a host's start tells the person beside the servers' own words: the tools found on
//! each server, what the catalog left out or renamed, rules that name no tool, and the
//! servers file's secrets registered so that no record shows them.

use serde_json::json;

use crate::{
    catalog::{Catalog, Listing},
    config::{Config, Settings, Transport},
    connect::Connection,
    policy::names,
    redact,
    trace::{Trace, Who},
};

/// `discovered N tools on S: …`, with the revision and the server's own name.
pub(super) fn report_discovery(conn: &Connection, listing: &Listing, trace: &Trace) {
    let tools = &listing.tools;
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
    let implementation = conn.implementation.as_ref();
    trace.add(
        Who::Host,
        format!(
            "discovered {} tool{} on {}: {}",
            tools.len(),
            if tools.len() == 1 { "" } else { "s" },
            conn.name,
            names.join(", ")
        ),
        json!({
            "protocol": conn.protocol.to_string(),
            "server": implementation.map(|i| i.name.clone()).unwrap_or_else(|| conn.name.to_string()),
            "version": implementation.map(|i| i.version.clone()),
        }),
    );
}

/// What the catalog left out or renamed, in words, for the person.
pub(super) fn report_catalog(catalog: &Catalog, trace: &Trace) {
    for reason in &catalog.left_out {
        trace.add(Who::Host, reason.clone(), json!({}));
    }
    for collision in &catalog.collisions {
        trace.add(Who::Host, format!("renamed a tool: {collision}"), json!({}));
    }
    for filtered in &catalog.filtered {
        trace.add(Who::Host, filtered.clone(), json!({}));
    }
}

/// Warn about every `allow` entry and rule that names no tool of the servers it names:
/// a typo there protects nothing and says nothing.
pub(super) fn report_unmatched(
    settings: &Settings,
    catalog: &Catalog,
    unknown_servers: &[String],
    trace: &Trace,
) {
    let tools = catalog.names();
    let offered = names::Offered {
        tools: &tools,
        unknown_servers,
    };
    for name in names::unmatched(settings, &offered) {
        trace.add(
            Who::Host,
            format!("warning: {}", name.describe()),
            json!({"rule": name.place, "tool": name.name, "nearest": name.nearest}),
        );
    }
}

/// Tell the trace every secret the servers file gives: header values (and the token of a
/// bearer header), credentials in a URL, and stdio `env` values whose names say they are
/// secrets. They are replaced wherever the run shows, records or passes on text.
pub(super) fn register_secrets(config: &Config, secrets: &redact::Secrets) {
    for spec in &config.servers {
        match &spec.transport {
            Transport::Http {
                url,
                headers,
                oauth,
            } => {
                for value in headers.values() {
                    secrets.add(value);
                    if let Some((_, token)) = value.split_once(' ') {
                        secrets.add(token);
                    }
                }
                if let Some(secret) = oauth.as_ref().and_then(|o| o.client_secret.as_ref()) {
                    secrets.add(secret);
                }
                if let Some((key, _)) = oauth.as_ref().and_then(|o| o.private_key.as_ref()) {
                    secrets.add(key);
                }
                if let Some(idp) = oauth.as_ref().and_then(|o| o.idp.as_ref()) {
                    if let Some(secret) = &idp.client_secret {
                        secrets.add(secret);
                    }
                    if let crate::config::AssertionSource::Value(id_token) = &idp.id_token {
                        secrets.add(id_token);
                    }
                }
                for secret in redact::url_secrets(url) {
                    secrets.add(&secret);
                }
            }
            Transport::Stdio { env, .. } => {
                for (name, value) in env {
                    if redact::is_secret_name(name) {
                        secrets.add(value);
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Identity;

    #[test]
    fn a_machine_grants_keys_and_tokens_are_hidden_wherever_the_run_writes() {
        // The values through variables' defaults: the test changes no environment.
        let file = serde_json::json!({"mcpServers": {
            "ci": {"url": "https://mcp.example.com/mcp", "oauth": {"grant": "client_credentials",
                "clientId": "ci-bot", "signingAlgorithm": "ES256",
                "privateKey": "${GATEHOUSE_TEST_UNSET:------BEGIN PRIVATE KEY-----\nKEYBYTES\n-----END PRIVATE KEY-----}"}},
            "wiki": {"url": "https://wiki.example.com/mcp", "oauth": {"grant": "enterprise_managed",
                "clientId": "gatehouse", "clientSecret": "${GATEHOUSE_TEST_UNSET:-AS-SECRET}",
                "idp": {"issuer": "https://login.example.com", "tokenEndpoint": "https://login.example.com/token",
                    "clientId": "g", "clientSecret": "${GATEHOUSE_TEST_UNSET:-IDP-SECRET}",
                    "idToken": "${GATEHOUSE_TEST_UNSET:-eyJh.ID-TOKEN.c2ln}"}}}}});
        let config = Config::parse(&file.to_string(), "s.json", &Identity::default()).unwrap();
        let secrets = redact::Secrets::default();
        register_secrets(&config, &secrets);
        let pem = "-----BEGIN PRIVATE KEY-----\nKEYBYTES\n-----END PRIVATE KEY-----";
        let text = format!("{pem} AS-SECRET IDP-SECRET eyJh.ID-TOKEN.c2ln");
        let said = secrets.text(&text);
        for secret in ["KEYBYTES", "AS-SECRET", "IDP-SECRET", "ID-TOKEN"] {
            assert!(!said.contains(secret), "{secret} shown: {said}");
        }
    }
}
