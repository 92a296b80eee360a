//! Embeds every file under `data/` and `tools/` into the binary, so the reference servers
//! start from the repository's data files with nothing else installed.
use std::{env, fs, path::Path};

fn walk(dir: &Path, root: &Path, out: &mut Vec<(String, String)>) {
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    let mut entries: Vec<_> = entries.flatten().collect();
    entries.sort_by_key(|e| e.path());
    for entry in entries {
        let path = entry.path();
        if path.is_dir() {
            walk(&path, root, out);
        } else {
            let rel = path
                .strip_prefix(root)
                .unwrap()
                .to_string_lossy()
                .replace('\\', "/");
            out.push((
                rel,
                path.canonicalize().unwrap().to_string_lossy().into_owned(),
            ));
        }
    }
}

fn main() {
    let manifest = env::var("CARGO_MANIFEST_DIR").unwrap();
    let root = Path::new(&manifest);
    let mut files = Vec::new();
    for top in ["data", "tools"] {
        println!("cargo:rerun-if-changed={top}");
        walk(&root.join(top), root, &mut files);
    }
    let mut code = String::from(
        "/// Every embedded data file: (path relative to the crate, contents).\npub static FILES: &[(&str, &str)] = &[\n",
    );
    for (rel, abs) in files {
        code.push_str(&format!("    ({rel:?}, include_str!({abs:?})),\n"));
    }
    code.push_str("];\n");
    fs::write(
        Path::new(&env::var("OUT_DIR").unwrap()).join("embedded.rs"),
        code,
    )
    .unwrap();
}
