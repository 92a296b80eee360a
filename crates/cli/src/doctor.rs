//! `gatehouse doctor`: is everything the host needs in order? The servers file, each
//! configured server (started or reached, the revision agreed, its tools and any left out
//! with the reason, the time it took), the keys and token files of sign-ins with no
//! person, the model endpoint (reachable, the model served),
//! and every place the host writes (there or creatable, and readable by the user only),
//! each with a plain verdict and, when it is not `ok`, the fix in words.

use std::{sync::Arc, time::Instant};

use gatehouse::{
    config::{Config, ServerSpec, Transport},
    model::openai::{ModelList, OpenAi},
    probe::{self, Probe},
    text::{visible_json, visible_line},
    trace::Trace,
};
use serde::Serialize;
use serde_json::json;

mod places;
mod sign_in;
#[cfg(feature = "built-in-servers")]
mod tickets;

use crate::args::DoctorArgs;
use places::data_checks;

/// Most model ids named when an endpoint does not list the model asked for.
const MODELS_NAMED: usize = 10;

/// How one thing stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Verdict {
    /// In order.
    Ok,
    /// Works, but something deserves a look.
    Warning,
    /// Does not work.
    Broken,
}

/// One thing looked at.
#[derive(Debug, Clone, Serialize)]
pub struct Check {
    /// `config`, `server`, `sign-in`, `model`, `data` or `sandbox`.
    pub area: &'static str,
    /// What was looked at.
    pub name: String,
    pub verdict: Verdict,
    /// What was found.
    pub detail: String,
    /// What to do, when it is not `ok`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fix: Option<String>,
}

fn check(area: &'static str, name: impl Into<String>, verdict: Verdict, detail: String) -> Check {
    Check {
        area,
        name: name.into(),
        verdict,
        detail,
        fix: None,
    }
}

impl Check {
    fn fix(mut self, fix: impl Into<String>) -> Check {
        self.fix = Some(fix.into());
        self
    }
}

/// Look at everything and report; `Ok(false)` when anything is broken. Each check is
/// printed as soon as it is made, so each server's line shows once that server is ready
/// (they start at once); `--json` prints one document at the end.
pub async fn run(args: DoctorArgs) -> anyhow::Result<bool> {
    let mut report = Report::new(args.json);
    // Doctor starts nothing a project's file names until the person trusted it, and asks
    // nothing: it lists what is left out.
    let config =
        match crate::start::load_config_asking(&args.host, false, crate::project::Asking::Never) {
            Ok(config) => {
                config_checks(&config)
                    .into_iter()
                    .for_each(|c| report.add(c));
                Some(config)
            }
            Err(e) => {
                report.add(
                    check("config", "servers file", Verdict::Broken, format!("{e:#}")).fix(
                        "correct the file where the message says; the host cannot start without it",
                    ),
                );
                None
            }
        };
    if let Some(config) = &config {
        let probes = probe::probe_each(
            config,
            config.settings.connect_timeout,
            &Trace::new(Arc::new(crate::screen::StartNotes)),
            |probe| report.add(server_check(config, probe)),
        )
        .await;
        name_checks(config, &probes)
            .into_iter()
            .for_each(|c| report.add(c));
    }
    sign_in::checks(config.as_ref())
        .into_iter()
        .for_each(|c| report.add(c));
    let settings = config
        .as_ref()
        .map(|c| c.settings.clone())
        .unwrap_or_default();
    let spec = args
        .host
        .model
        .clone()
        .or(settings.model.clone())
        .unwrap_or_else(|| "scripted".into());
    report.add(model_check(&spec).await);
    data_checks(config.as_ref(), &settings)
        .into_iter()
        .for_each(|c| report.add(c));
    sandbox_checks(config.as_ref())
        .into_iter()
        .for_each(|c| report.add(c));
    report.finish()
}

/// What this machine can apply of a server's box: broken where a server asks for a box
/// it cannot have (it will not start), a warning where none does.
fn sandbox_checks(config: Option<&Config>) -> Vec<Check> {
    let boxed: Vec<&str> = config
        .map(|c| {
            c.servers
                .iter()
                .filter(|s| s.sandbox.is_some())
                .map(|s| s.name.as_str())
                .collect()
        })
        .unwrap_or_default();
    gatehouse::connect::sandbox::what_this_machine_applies()
        .into_iter()
        .map(|(name, found)| match found {
            Ok(detail) => check("sandbox", name, Verdict::Ok, detail),
            Err(detail) if boxed.is_empty() => check("sandbox", name, Verdict::Warning, detail)
                .fix("a server whose entry asks for a \"sandbox\" will not start here"),
            Err(detail) => check("sandbox", name, Verdict::Broken, detail).fix(format!(
                "{} ask for a sandbox and will not start here: run them on a machine \
                 that has it, or take their \"sandbox\" out knowingly",
                boxed.join(", ")
            )),
        })
        .collect()
}

/// The checks made so far, each printed as it is added (unless `--json`, whose one
/// document is printed by [`Report::finish`]).
struct Report {
    checks: Vec<Check>,
    json: bool,
    /// The area whose heading was printed last.
    area: &'static str,
}

impl Report {
    fn new(json: bool) -> Report {
        Report {
            checks: Vec::new(),
            json,
            area: "",
        }
    }

    fn add(&mut self, mut c: Check) {
        c.name = visible_line(&c.name).into_owned();
        if !self.json {
            if c.area != self.area {
                self.area = c.area;
                println!("{}", c.area);
            }
            let verdict = match c.verdict {
                Verdict::Ok => "ok",
                Verdict::Warning => "warning",
                Verdict::Broken => "broken",
            };
            println!("  {verdict:<8} {}: {}", c.name, visible_line(&c.detail));
            if let Some(fix) = &c.fix {
                println!("           fix: {}", visible_line(fix));
            }
        }
        self.checks.push(c);
    }

    /// The summary (or the JSON document); `Ok(false)` when anything is broken.
    fn finish(self) -> anyhow::Result<bool> {
        let count = |v: Verdict| self.checks.iter().filter(|c| c.verdict == v).count();
        let (broken, warnings) = (count(Verdict::Broken), count(Verdict::Warning));
        if self.json {
            let mut report = json!({"checks": self.checks, "broken": broken, "warnings": warnings});
            visible_json(&mut report);
            println!("{}", serde_json::to_string_pretty(&report)?);
        } else {
            println!();
            if broken == 0 && warnings == 0 {
                println!("Everything is in order.");
            } else {
                let plural =
                    |n: usize, word: &str| format!("{n} {word}{}", if n == 1 { "" } else { "s" });
                println!(
                    "{} broken, {}: the fixes are above.",
                    broken,
                    plural(warnings, "warning")
                );
            }
        }
        Ok(broken == 0)
    }
}

/// Which servers file is used, and what in it the host ignores.
fn config_checks(config: &Config) -> Vec<Check> {
    let mut checks = vec![check(
        "config",
        "servers file",
        Verdict::Ok,
        format!("using {}", config.source),
    )];
    for warning in &config.warnings {
        let disabled = warning.contains(" is disabled in ");
        let verdict = if disabled {
            Verdict::Ok
        } else {
            Verdict::Warning
        };
        let c = check("config", "servers file", verdict, warning.clone());
        let owner = Config::owner_of(std::path::Path::new(&config.source));
        checks.push(match (disabled, owner) {
            (true, _) => c,
            // Another program's file is that program's to change, not this one's.
            (false, Some(owner)) => c.fix(format!(
                "{} is {owner}'s file: to change the server for Gatehouse, add it to your own with `gatehouse mcp add --scope user`",
                config.source
            )),
            (false, None) => c.fix(format!("correct or remove it in {}", config.source)),
        });
    }
    checks.extend(trust_checks(config));
    if config.servers.is_empty() && config.broken.is_empty() {
        checks.push(
            check(
                "config",
                "servers file",
                Verdict::Warning,
                "no servers are configured".into(),
            )
            .fix("add one: gatehouse mcp add NAME -- COMMAND [ARGS]…"),
        );
    }
    checks
}

/// Every `allow` entry and rule that names no tool of the servers it names, with the
/// nearest real name: a typo there protects nothing.
fn name_checks(config: &Config, probes: &[Probe]) -> Vec<Check> {
    use gatehouse::policy::names;
    let tools: Vec<String> = probes
        .iter()
        .filter_map(|p| p.outcome.as_ref().ok())
        .flat_map(|r| r.tools.iter().cloned())
        .collect();
    let unknown_servers: Vec<String> = probes
        .iter()
        .filter(|p| p.outcome.is_err())
        .map(|p| p.server.clone())
        .chain(config.broken.iter().map(|(name, _)| name.clone()))
        .collect();
    let offered = names::Offered {
        tools: &tools,
        unknown_servers: &unknown_servers,
    };
    names::unmatched(&config.settings, &offered)
        .into_iter()
        .map(|u| {
            let fix = match &u.nearest {
                Some(near) => format!("write {near} in {}", u.place),
                None => format!(
                    "correct or remove {} in {}: `gatehouse tools` lists the real names",
                    u.place, config.source
                ),
            };
            check("policy", u.place.clone(), Verdict::Warning, u.describe()).fix(fix)
        })
        .collect()
}

/// What of a project's servers file is left out until the person trusts it.
fn trust_checks(config: &Config) -> Vec<Check> {
    let Some(review) = &config.project else {
        return Vec::new();
    };
    let file = review.file.display();
    let mut checks: Vec<Check> = review
        .untrusted_servers()
        .map(|server| {
            check(
                "config",
                format!("project server {}", server.name),
                Verdict::Warning,
                format!(
                    "not trusted, not started: {}",
                    crate::project::entry_line(&server.entry)
                ),
            )
            .fix(format!(
                "read the command above; if you want it, `gatehouse mcp trust` in this folder ({file})"
            ))
        })
        .collect();
    if !review.tightened.is_empty() {
        // What applies without trust: shown, so a refusal it causes is no mystery.
        checks.push(check(
            "config",
            "project settings",
            Verdict::Ok,
            format!(
                "{file} tightens your policy with {} (no trust needed)",
                review.tightened.join(", ")
            ),
        ));
    }
    checks.extend(review.untrusted_settings().map(|setting| {
        check(
            "config",
            format!("project setting {}", setting.key),
            Verdict::Warning,
            format!(
                "{file} sets \"{}\", which would loosen your policy: ignored",
                setting.key
            ),
        )
        .fix(format!(
            "put it in your own servers file, or `gatehouse mcp trust --settings {}`",
            setting.key
        ))
    }));
    checks
}

/// How a server is started or reached, in words.
fn how_reached(spec: Option<&ServerSpec>) -> String {
    match spec.map(|s| &s.transport) {
        Some(Transport::Stdio { command, args, .. }) => {
            format!("started {command} {}", args.join(" "))
                .trim_end()
                .to_owned()
        }
        Some(Transport::Http { url, .. }) => format!("reached {}", gatehouse::redact::url(url)),
        None => "not used".into(),
    }
}

/// One server's check, from its probe.
fn server_check(config: &Config, p: &Probe) -> Check {
    let spec = config.servers.iter().find(|s| s.name == p.server);
    let ms = p.elapsed.as_millis();
    let reached = match &p.outcome {
        Err(failure) => {
            return check("server", &p.server, Verdict::Broken, failure.reason.clone())
                .fix(failure.fix.clone());
        }
        Ok(reached) => reached,
    };
    let tools = reached
        .tools
        .iter()
        .map(|t| t.split_once("__").map_or(t.as_str(), |(_, tool)| tool))
        .collect::<Vec<_>>()
        .join(", ");
    let mut detail = format!(
        "{}; revision {}, {} tool{} ({tools}), {ms} ms",
        how_reached(spec),
        reached.protocol,
        reached.tools.len(),
        if reached.tools.len() == 1 { "" } else { "s" },
    );
    if reached.left_out.is_empty() {
        return check("server", &p.server, Verdict::Ok, detail);
    }
    detail.push_str(&format!("; left out: {}", reached.left_out.join("; ")));
    check("server", &p.server, Verdict::Warning, detail).fix(
        "the tools left out are not offered to the model; the server's authors can fix their definitions",
    )
}

/// The model: a built-in one needs nothing; an endpoint must answer and serve the model.
async fn model_check(spec: &str) -> Check {
    let name = spec.to_owned();
    let Some(model) = spec.strip_prefix("openai:") else {
        return match gatehouse::model::from_spec(spec) {
            Ok(_) => check(
                "model",
                name,
                Verdict::Ok,
                "built in: no endpoint to reach".into(),
            ),
            Err(e) => check("model", name, Verdict::Broken, e)
                .fix("use --model scripted, playback:FILE or openai:MODEL"),
        };
    };
    let endpoint = match OpenAi::from_env(model) {
        Ok(e) => e,
        Err(e) => {
            return check("model", name, Verdict::Broken, e.to_string())
                .fix("set OPENAI_BASE_URL to the endpoint, e.g. http://127.0.0.1:8000/v1");
        }
    };
    let base = endpoint.base_url().to_owned();
    let started = Instant::now();
    let listed = endpoint.served_models().await;
    let ms = started.elapsed().as_millis();
    match listed {
        Ok(ModelList::Listed(ids)) if ids.iter().any(|id| id == model) => check(
            "model",
            name,
            Verdict::Ok,
            format!("{base} answers and serves {model} ({} model{} listed), {ms} ms", ids.len(), if ids.len() == 1 { "" } else { "s" }),
        ),
        Ok(ModelList::Listed(ids)) => {
            let served: Vec<&str> = ids.iter().take(MODELS_NAMED).map(String::as_str).collect();
            check(
                "model",
                name,
                Verdict::Broken,
                format!("{base} answers, but does not list {model}; it lists {}", if served.is_empty() { "no model".into() } else { served.join(", ") }),
            )
            .fix("use --model openai:ID with an ID it lists, or load the model on the server")
        }
        Ok(ModelList::Unreadable) => check(
            "model",
            name,
            Verdict::Warning,
            format!("{base} answers GET /models, but not with a model list, so {model} cannot be checked"),
        )
        .fix("is OPENAI_BASE_URL the API's base URL? It usually ends in /v1"),
        Ok(ModelList::NotOffered(status)) => check(
            "model",
            name,
            Verdict::Warning,
            format!("{base} answers, but has no model list ({status}), so {model} cannot be checked"),
        )
        .fix("nothing to do if questions work; the first question will say if the model is not served"),
        Err(e) => {
            let text = e.to_string();
            let fix = if text.contains("key") {
                "set OPENAI_API_KEY to a key the endpoint accepts (a key can expire)"
            } else if text.contains("cannot reach") || text.contains("no answer") {
                "start the model server, or set OPENAI_BASE_URL to where it listens (…/v1)"
            } else {
                "check OPENAI_BASE_URL: it must be the API's base URL, usually ending in /v1"
            };
            check("model", name, Verdict::Broken, text).fix(fix)
        }
    }
}
