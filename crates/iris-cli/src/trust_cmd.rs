//! `iris trust`: the trusted-folders list.

#[allow(clippy::wildcard_imports)] // The shell's shared types and imports.
use crate::*;

/// `iris trust [DIR] [--remove]` and `iris trust --list`.
pub(crate) fn trust_command(
    cli: &Cli,
    dir: Option<&Path>,
    remove: bool,
    list: bool,
) -> Result<u8, Failure> {
    let file = TrustStore::default_file().ok_or(TrustError::Unavailable)?;
    let mut store = TrustStore::load(&file)?;
    if list {
        let folders: Vec<String> = store.folders().map(|f| f.display().to_string()).collect();
        if cli.json {
            print_json(&json!({"file": file.display().to_string(), "folders": folders}));
        } else {
            for folder in &folders {
                line(folder);
            }
        }
        return Ok(0);
    }
    let dir = dir.unwrap_or(Path::new("."));
    let (folder, changed) = if remove {
        store.untrust(dir)
    } else {
        store.trust(dir)?
    };
    if changed {
        store.save()?;
    }
    let state = match (remove, changed) {
        (false, true) => "trusted",
        (false, false) => "already trusted",
        (true, true) => "no longer trusted",
        (true, false) => "was not trusted",
    };
    if cli.json {
        print_json(&json!({
            "folder": folder.display().to_string(),
            "trusted": !remove,
            "changed": changed,
            "file": file.display().to_string(),
        }));
    } else {
        line(&format!(
            "{state}: {} (trusted folders are kept in {})",
            folder.display(),
            file.display()
        ));
    }
    Ok(0)
}
