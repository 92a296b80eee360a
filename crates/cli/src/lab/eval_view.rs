//! An eval in the lab (`gatehouse lab --eval DIR`): the report and the recordings of its
//! attempts, from the folder `gatehouse eval --record DIR` wrote. A recording is found by
//! its stem among the folder's own files: no name from a request is ever made into a path.

use std::path::{Path, PathBuf};

/// Largest report read, in bytes.
const MAX_REPORT_BYTES: u64 = 64 << 20;
/// Largest recording served, in bytes.
const MAX_RECORDING_BYTES: u64 = 256 << 20;

/// An eval's folder, its report read and checked at start.
pub struct EvalDir {
    dir: PathBuf,
    /// `report.json`, as written.
    pub report: String,
}

impl EvalDir {
    /// Read `dir/report.json`; a folder without one is refused with what to run.
    pub fn open(dir: &Path) -> anyhow::Result<EvalDir> {
        let path = dir.join("report.json");
        let report = gatehouse::files::read_small(&path, MAX_REPORT_BYTES)
            .map_err(anyhow::Error::msg)?
            .ok_or_else(|| {
                anyhow::anyhow!(
                    "{} holds no eval report: write one with gatehouse eval SUITE --record {}",
                    dir.display(),
                    dir.display()
                )
            })?;
        serde_json::from_str::<serde_json::Value>(&report)
            .map_err(|e| anyhow::anyhow!("{}: not an eval report: {e}", path.display()))?;
        Ok(EvalDir {
            dir: dir.to_owned(),
            report,
        })
    }

    /// The recording `STEM.jsonl` of the folder, if the folder holds a file of that name.
    pub fn recording(&self, stem: &str) -> Result<String, String> {
        let wanted = format!("{stem}.jsonl");
        let found = std::fs::read_dir(&self.dir)
            .map_err(|e| format!("the eval's folder: {e}"))?
            .filter_map(Result::ok)
            .find(|e| e.file_name().to_str() == Some(wanted.as_str()))
            .ok_or_else(|| "no such recording in the eval's folder".to_owned())?;
        gatehouse::files::read_small(&found.path(), MAX_RECORDING_BYTES)?
            .ok_or_else(|| "no such recording in the eval's folder".to_owned())
    }
}
