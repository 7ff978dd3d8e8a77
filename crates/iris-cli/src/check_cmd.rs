//! `iris check`: every problem of the agent YAML, without starting anything.

#[allow(clippy::wildcard_imports)] // The shell's shared types and imports.
use crate::*;

pub(crate) async fn check(
    cli: &Cli,
    signals: &mut Signals,
    file: Result<PathBuf, Failure>,
) -> Result<u8, Failure> {
    // An untrusted folder or an unreadable trust file is not a config problem to list:
    // nothing may be checked (checking starts the servers).
    let file = match file {
        Err(f) if f.code != iris_runner::codes::CONFIG_NOT_FOUND => return Err(f),
        other => other,
    };
    let mut problems: Vec<(String, String)> = Vec::new();
    // Notes are not problems (an optional MCP server that did not start, a tool only
    // a runner installs), but a user checking a config wants to see them.
    let mut notes: Vec<String> = Vec::new();
    let loaded = match file {
        Ok(file) => interruptible(signals, load(cli, file)).await,
        Err(f) => Err(f),
    };
    match loaded {
        Err(failure) if failure.is_interrupted() => return Err(failure),
        Err(failure) => problems.push((failure.code, failure.message)),
        Ok(loaded) => {
            for e in iris_runner::check_config(&loaded, &HostRegistry::new()) {
                problems.push((e.code().to_owned(), e.to_string()));
            }
            // `backend: hybrid` without its model: the command that fetches it.
            #[cfg(feature = "embed")]
            problems.extend(crate::discovery_cmd::missing_model(&loaded));
            // Nothing static is wrong: start everything once, which also catches
            // environment problems such as a missing Docker engine.
            if problems.is_empty() {
                match interruptible(signals, assemble(cli, &loaded)).await {
                    Ok(env) => {
                        notes.clone_from(&env.notes);
                        match close(signals, &env).await {
                            Err(f) if f.is_interrupted() => return Err(f),
                            Err(f) => problems.push((f.code, f.message)),
                            Ok(()) => {}
                        }
                    }
                    Err(f) if f.is_interrupted() => return Err(f),
                    Err(f) => problems.push((f.code, f.message)),
                }
            }
        }
    }
    if cli.json {
        let list: Vec<Value> = problems
            .iter()
            .map(|(code, message)| json!({"code": code, "message": message}))
            .collect();
        print_json(&json!({"ok": problems.is_empty(), "problems": list, "notes": notes}));
    } else if problems.is_empty() {
        for note in &notes {
            line(&format!("note: {note}"));
        }
        line("ok");
    } else {
        for (code, message) in &problems {
            line(&format!("error[{code}]: {message}"));
        }
    }
    Ok(if problems.is_empty() { 0 } else { 1 })
}
