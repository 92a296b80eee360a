//! The report of a suite's run: per task and variant and in total, the pass rate with its
//! 95% Wilson interval, model calls, tokens, definition bytes per model call and time; each
//! variant against the first, with whether the repetitions can tell the difference from
//! chance (Newcombe's interval for a difference of two rates).

use serde::Serialize;

use super::run::Attempt;

/// z for a two-sided 95% interval.
const Z95: f64 = 1.959_963_984_540_054;

/// A pass rate and its 95% interval.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Rate {
    /// How many passed.
    pub passed: u64,
    /// How many ran.
    pub runs: u64,
    /// The share that passed.
    pub rate: f64,
    /// The interval's low end.
    pub low: f64,
    /// The interval's high end.
    pub high: f64,
}

impl Rate {
    /// `passed` of `runs`, with the Wilson score interval (sound at 0 and at every run
    /// passing, where the normal approximation collapses to a point).
    pub fn of(passed: u64, runs: u64) -> Rate {
        if runs == 0 {
            return Rate {
                passed,
                runs,
                rate: 0.0,
                low: 0.0,
                high: 1.0,
            };
        }
        let n = runs as f64;
        let p = passed as f64 / n;
        let z2 = Z95 * Z95;
        let centre = (p + z2 / (2.0 * n)) / (1.0 + z2 / n);
        let half = Z95 * (p * (1.0 - p) / n + z2 / (4.0 * n * n)).sqrt() / (1.0 + z2 / n);
        Rate {
            passed,
            runs,
            rate: p,
            low: (centre - half).max(0.0),
            high: (centre + half).min(1.0),
        }
    }
}

/// How one variant compares with the first: the difference of pass rates and its 95%
/// interval (Newcombe's method 10, from the two Wilson intervals).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Difference {
    /// The difference of the pass rates.
    pub difference: f64,
    /// The interval's low end.
    pub low: f64,
    /// The interval's high end.
    pub high: f64,
    /// Does the interval leave out zero? If not, the repetitions cannot tell the
    /// difference from chance.
    pub telling: bool,
}

impl Difference {
    /// `b` against `a` (b − a).
    pub fn between(a: &Rate, b: &Rate) -> Difference {
        let d = b.rate - a.rate;
        let low = d - ((b.rate - b.low).powi(2) + (a.high - a.rate).powi(2)).sqrt();
        let high = d + ((b.high - b.rate).powi(2) + (a.rate - a.low).powi(2)).sqrt();
        Difference {
            difference: d,
            low,
            high,
            telling: low > 0.0 || high < 0.0,
        }
    }
}

/// The figures of some attempts.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Figures {
    /// The pass rate.
    pub pass: Rate,
    /// Mean per attempt.
    pub model_calls: f64,
    /// Tokens the model reported.
    pub tokens: f64,
    /// Definition bytes per model call (the catalog's cost to the model).
    pub definition_bytes_per_call: f64,
    /// Mean milliseconds per attempt.
    pub ms: f64,
}

impl Figures {
    fn of<'a>(attempts: impl Iterator<Item = &'a Attempt> + Clone) -> Figures {
        let n = attempts.clone().count() as u64;
        let passed = attempts.clone().filter(|a| a.passed).count() as u64;
        let sum = |f: fn(&Attempt) -> f64| attempts.clone().map(f).sum::<f64>();
        let mean = |total: f64| if n == 0 { 0.0 } else { total / n as f64 };
        let calls = sum(|a| a.run.model_calls as f64);
        let bytes = sum(|a| a.run.definition_bytes as f64);
        Figures {
            pass: Rate::of(passed, n),
            model_calls: mean(calls),
            tokens: mean(sum(|a| a.run.tokens as f64)),
            definition_bytes_per_call: if calls == 0.0 { 0.0 } else { bytes / calls },
            ms: mean(sum(|a| a.run.ms)),
        }
    }
}

/// One task's row: its figures under each variant.
#[derive(Debug, Clone, Serialize)]
pub struct TaskRow {
    /// The task.
    pub task: String,
    /// The variants.
    pub variants: Vec<Figures>,
}

/// One variant's total, and how it compares with the first.
#[derive(Debug, Clone, Serialize)]
pub struct VariantTotal {
    /// The variant.
    pub variant: String,
    /// Its figures.
    pub figures: Figures,
    /// Against the first variant (none for the first).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub against_first: Option<Difference>,
    /// Reaches the suite's threshold (true when it has none).
    pub meets_threshold: bool,
}

/// The whole report.
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    /// The suite's name.
    pub suite: String,
    /// Runs of each task under each variant.
    pub repeat: u32,
    /// The lowest pass rate each variant must reach.
    pub threshold: Option<f64>,
    /// The variants.
    pub variants: Vec<String>,
    /// One row per task.
    pub tasks: Vec<TaskRow>,
    /// One total per variant.
    pub totals: Vec<VariantTotal>,
    /// Every attempt that failed, with why.
    pub failed: Vec<Attempt>,
    /// Seconds the whole run took.
    pub seconds: f64,
}

impl Report {
    /// The report of `attempts`, `tasks` and `variants` in the suite's order.
    pub fn of(suite: &super::Suite, attempts: &[Attempt], seconds: f64) -> Report {
        let variants: Vec<String> = suite.variants.iter().map(|v| v.name.clone()).collect();
        let of = |task: Option<&str>, variant: &str| {
            Figures::of(
                attempts
                    .iter()
                    .filter(move |a| a.variant == variant && task.is_none_or(|t| a.task == t)),
            )
        };
        let tasks = suite
            .tasks
            .iter()
            .map(|t| TaskRow {
                task: t.id.clone(),
                variants: variants.iter().map(|v| of(Some(&t.id), v)).collect(),
            })
            .collect();
        let first = variants.first().map(|v| of(None, v).pass);
        let totals = variants
            .iter()
            .enumerate()
            .map(|(i, v)| {
                let figures = of(None, v);
                VariantTotal {
                    variant: v.clone(),
                    against_first: first
                        .filter(|_| i > 0)
                        .map(|a| Difference::between(&a, &figures.pass)),
                    meets_threshold: suite.threshold.is_none_or(|t| figures.pass.rate >= t),
                    figures,
                }
            })
            .collect();
        Report {
            suite: suite.name.clone(),
            repeat: suite.repeat,
            threshold: suite.threshold,
            variants,
            tasks,
            totals,
            failed: attempts.iter().filter(|a| !a.passed).cloned().collect(),
            seconds,
        }
    }

    /// Does every variant reach the threshold?
    pub fn meets_threshold(&self) -> bool {
        self.totals.iter().all(|t| t.meets_threshold)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 5e-4
    }

    #[test]
    fn the_wilson_interval_matches_published_figures() {
        // Newcombe (1998), table I: 81/263 gives 0.2553 to 0.3662.
        let r = Rate::of(81, 263);
        assert!(close(r.low, 0.2553) && close(r.high, 0.3662), "{r:?}");
        // 0 of 10 and 10 of 10: an interval, not a point.
        let none = Rate::of(0, 10);
        assert!(close(none.low, 0.0) && close(none.high, 0.2775), "{none:?}");
        let all = Rate::of(10, 10);
        assert!(close(all.low, 0.7225) && close(all.high, 1.0), "{all:?}");
    }

    #[test]
    fn newcombes_interval_matches_published_figures_and_says_when_chance_can_explain() {
        // Newcombe (1998), table II, example (a): 56/70 against 48/80, method 10:
        // 0.0524 to 0.3339.
        let d = Difference::between(&Rate::of(48, 80), &Rate::of(56, 70));
        assert!(close(d.low, 0.0524) && close(d.high, 0.3339), "{d:?}");
        assert!(d.telling);
        // 3 of 5 against 4 of 5: no telling with five repetitions.
        let small = Difference::between(&Rate::of(3, 5), &Rate::of(4, 5));
        assert!(!small.telling, "{small:?}");
    }
}
