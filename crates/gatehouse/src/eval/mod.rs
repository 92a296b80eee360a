//! Evals: a suite of tasks run through the host, as `ask` runs a question (the same
//! policy, person, ledger and bounds), each graded by its checks; repeated, under each
//! variant of the suite, and reported side by side (`gatehouse eval`, `docs/evals.md`).
//!
//! The grade is the policy point's as much as the model's: a check reads what the ledger
//! decided (asked, refused, by which rule) and what the servers hold afterwards, not only
//! the answer's words.

pub mod check;
pub mod formats;
pub mod lens;
pub mod person;
pub mod report;
pub mod resend;
pub mod run;
pub mod seen;
pub mod suite;

use std::path::Path;

pub use report::Report;
pub use run::{Attempt, EVAL_DIR_VAR, Setting};
pub use suite::Suite;

/// Where a run is, for a progress bar: attempts done, of how many, and the last one.
pub struct Progress<'a> {
    /// Attempts done.
    pub done: usize,
    /// Attempts in all.
    pub total: usize,
    /// The attempt just done.
    pub last: &'a Attempt,
}

/// Run every task of `suite`, `suite.repeat` times under each variant, in order, each
/// attempt in a fresh folder under `scratch`; `progress` is told after each.
pub async fn run_suite(
    suite: &Suite,
    setting: &Setting,
    scratch: &Path,
    mut progress: impl FnMut(Progress<'_>),
) -> Result<Report, String> {
    preflight(suite, setting).await?;
    let started = std::time::Instant::now();
    let total = suite.tasks.len() * suite.variants.len() * suite.repeat as usize;
    let mut attempts = Vec::with_capacity(total);
    for task in &suite.tasks {
        for variant in &suite.variants {
            for number in 1..=suite.repeat {
                let dir = scratch.join(format!("{}-{}", attempts.len(), number));
                crate::files::private_dir(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
                let attempt = run::attempt(task, variant, number, &dir, setting).await;
                attempts.push(attempt);
                progress(Progress {
                    done: attempts.len(),
                    total,
                    last: attempts.last().expect("just pushed"),
                });
            }
        }
    }
    Ok(Report::of(
        suite,
        &attempts,
        started.elapsed().as_secs_f64(),
    ))
}

/// Every model the suite names, made and checked once before any attempt (endpoint
/// reachable, key accepted): a dead endpoint stops the run at once with its reason, rather
/// than failing every attempt alike.
async fn preflight(suite: &Suite, setting: &Setting) -> Result<(), String> {
    let mut specs: Vec<&str> = Vec::new();
    for task in &suite.tasks {
        for variant in &suite.variants {
            // A model left to the servers file is checked by its attempts.
            let Some(spec) = variant.model.as_deref().or(task.model.as_deref()) else {
                continue;
            };
            if !specs.contains(&spec) {
                specs.push(spec);
            }
        }
    }
    for spec in specs {
        let mut model = crate::model::from_spec_with(spec, &*setting.variable)
            .map_err(|e| format!("model {spec}: {e}"))?;
        model
            .preflight()
            .await
            .map_err(|e| format!("model {spec}: {e}"))?;
    }
    Ok(())
}
