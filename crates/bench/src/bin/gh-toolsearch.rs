//! `gh-toolsearch`: tool search on the quality catalog.
//!
//!     gh-toolsearch --list     every tool of the catalog: name and description's start

use gatehouse_bench::{Flags, catalog};

fn main() -> anyhow::Result<()> {
    let flags = Flags::parse();
    let servers = catalog::quality_catalog(&catalog::repo_root())?;
    if flags.has("list") {
        for (server, tools) in &servers {
            for t in tools {
                let d = t["description"].as_str().unwrap_or("");
                let d: String = d.chars().take(110).collect();
                println!(
                    "{server}__{}\t{}",
                    t["name"].as_str().unwrap_or(""),
                    d.replace('\n', " ")
                );
            }
        }
    }
    Ok(())
}
