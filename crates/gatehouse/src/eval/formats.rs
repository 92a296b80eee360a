//! A report as people read it: rows of cells (a terminal pads them, Markdown puts pipes
//! between them), and JUnit XML for CI. Every string from a suite or a run is made
//! visible first; XML escapes it too.

use std::fmt::Write;

use super::report::{Difference, Figures, Rate, Report};
use crate::text::visible_line;

/// `7/10 70% [40–89%]`.
pub fn rate(r: &Rate) -> String {
    format!(
        "{}/{} {:.0}% [{:.0}–{:.0}%]",
        r.passed,
        r.runs,
        r.rate * 100.0,
        r.low * 100.0,
        r.high * 100.0
    )
}

/// `+20 points [−5, +45]: chance could explain it` (or `: a real difference`).
pub fn difference(d: &Difference) -> String {
    let verdict = if d.telling {
        "a difference the repetitions tell from chance"
    } else {
        "the repetitions cannot tell it from chance"
    };
    format!(
        "{:+.0} points [{:+.0}, {:+.0}]: {verdict}",
        d.difference * 100.0,
        d.low * 100.0,
        d.high * 100.0
    )
}

fn figures(f: &Figures) -> [String; 4] {
    [
        format!("{:.1}", f.model_calls),
        format!("{:.0}", f.tokens),
        format!("{:.0}", f.definition_bytes_per_call),
        format!("{:.0}", f.ms),
    ]
}

/// The per-task table: a header, then one row per task, the pass rate under each variant.
pub fn task_rows(report: &Report) -> Vec<Vec<String>> {
    let mut rows = vec![
        std::iter::once("task".to_owned())
            .chain(report.variants.iter().map(|v| visible_line(v).into_owned()))
            .collect(),
    ];
    for row in &report.tasks {
        rows.push(
            std::iter::once(visible_line(&row.task).into_owned())
                .chain(row.variants.iter().map(|f| rate(&f.pass)))
                .collect(),
        );
    }
    rows
}

/// The totals: one row per variant, with its figures and its difference from the first.
pub fn total_rows(report: &Report) -> Vec<Vec<String>> {
    let mut rows = vec![
        [
            "variant",
            "pass rate [95%]",
            "model calls",
            "tokens",
            "definition bytes/call",
            "ms",
            "against the first",
        ]
        .map(str::to_owned)
        .to_vec(),
    ];
    for t in &report.totals {
        let mut row = vec![visible_line(&t.variant).into_owned(), rate(&t.figures.pass)];
        row.extend(figures(&t.figures));
        row.push(t.against_first.as_ref().map(difference).unwrap_or_default());
        rows.push(row);
    }
    rows
}

/// Rows padded into columns, for a terminal.
pub fn padded(rows: &[Vec<String>]) -> String {
    let width = |i: usize| {
        rows.iter()
            .filter_map(|r| r.get(i))
            .map(|c| c.chars().count())
            .max()
            .unwrap_or(0)
    };
    let columns = rows.iter().map(Vec::len).max().unwrap_or(0);
    let widths: Vec<usize> = (0..columns).map(width).collect();
    let mut out = String::new();
    for row in rows {
        let cells: Vec<String> = row
            .iter()
            .zip(&widths)
            .map(|(c, w)| format!("{c:<w$}"))
            .collect();
        let _ = writeln!(out, "{}", cells.join("  ").trim_end());
    }
    out
}

/// Rows as a Markdown table (pipes in cells escaped).
fn markdown_table(rows: &[Vec<String>]) -> String {
    let mut out = String::new();
    for (i, row) in rows.iter().enumerate() {
        let cells: Vec<String> = row.iter().map(|c| c.replace('|', "\\|")).collect();
        let _ = writeln!(out, "| {} |", cells.join(" | "));
        if i == 0 {
            let _ = writeln!(out, "|{}", "---|".repeat(row.len()));
        }
    }
    out
}

/// `seeds: 10 task(s) × 2 variant(s) × 5 run(s) in 4.2 s`.
pub fn headline(report: &Report) -> String {
    format!(
        "{}: {} task(s) × {} variant(s) × {} run(s) in {:.1} s",
        visible_line(&report.suite),
        report.tasks.len(),
        report.variants.len(),
        report.repeat,
        report.seconds
    )
}

/// Each failed check of each failed attempt: `task (variant, run N), check C: why`.
pub fn failures(report: &Report) -> Vec<String> {
    report
        .failed
        .iter()
        .flat_map(|a| {
            a.failures.iter().map(move |(check, why)| {
                format!(
                    "{} ({}, run {}), check {check}: {}",
                    visible_line(&a.task),
                    visible_line(&a.variant),
                    a.number,
                    visible_line(why)
                )
            })
        })
        .collect()
}

/// The report as Markdown: the totals, the tasks, and each failed attempt with why.
pub fn markdown(report: &Report) -> String {
    let mut out = format!("# Eval {}\n\n## Totals\n\n", headline(report));
    out.push_str(&markdown_table(&total_rows(report)));
    out.push_str("\n## Tasks\n\n");
    out.push_str(&markdown_table(&task_rows(report)));
    let failed = failures(report);
    if !failed.is_empty() {
        out.push_str("\n## Failed\n\n");
        for line in failed {
            let _ = writeln!(out, "- {}", line.replace('|', "\\|"));
        }
    }
    out
}

fn xml(text: &str) -> String {
    visible_line(text)
        .replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
        .replace('\'', "&apos;")
}

/// The report as JUnit XML: a test suite per variant, a test case per task (failed when
/// any of its runs failed, each failure said).
pub fn junit(report: &Report) -> String {
    let mut out = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    let _ = writeln!(
        out,
        "<testsuites name=\"{}\" time=\"{:.3}\">",
        xml(&report.suite),
        report.seconds
    );
    for (v, variant) in report.variants.iter().enumerate() {
        let failed_tasks = report
            .tasks
            .iter()
            .filter(|t| t.variants[v].pass.passed < t.variants[v].pass.runs)
            .count();
        let _ = writeln!(
            out,
            "  <testsuite name=\"{}\" tests=\"{}\" failures=\"{failed_tasks}\">",
            xml(variant),
            report.tasks.len()
        );
        for row in &report.tasks {
            let f = &row.variants[v];
            let _ = write!(
                out,
                "    <testcase classname=\"{}\" name=\"{}\" time=\"{:.3}\"",
                xml(variant),
                xml(&row.task),
                f.ms / 1e3
            );
            let why: Vec<String> = report
                .failed
                .iter()
                .filter(|a| a.task == row.task && &a.variant == variant)
                .flat_map(|a| {
                    a.failures
                        .iter()
                        .map(move |(c, w)| format!("run {}, check {c}: {w}", a.number))
                })
                .collect();
            if why.is_empty() {
                out.push_str("/>\n");
            } else {
                let _ = writeln!(
                    out,
                    ">\n      <failure message=\"{} of {} runs passed\">{}</failure>\n    </testcase>",
                    f.pass.passed,
                    f.pass.runs,
                    xml(&why.join("; "))
                );
            }
        }
        out.push_str("  </testsuite>\n");
    }
    out.push_str("</testsuites>\n");
    out
}
