//! `iris check`: every problem of the agent YAML, without starting anything.

#[allow(clippy::wildcard_imports)] // The shell's shared types and imports.
use crate::*;

mod sandbox;

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
    // Which sandbox rules this kernel enforces, when the agent runs native commands.
    let mut sandbox = None;
    // The admin policies the config runs under and what they tightened.
    let mut policy = iris_runner::policy::AppliedPolicy::default();
    let loaded = match file {
        Ok(file) => interruptible(signals, load(cli, file)).await,
        Err(f) => Err(f),
    };
    match loaded {
        Err(failure) if failure.is_interrupted() => return Err(failure),
        Err(failure) => problems.push((failure.code, failure.message)),
        Ok(loaded) => {
            policy.clone_from(&loaded.policy);
            // `backend: hybrid` without its model: the command that fetches it.
            #[cfg(feature = "embed")]
            let missing_model = crate::discovery_cmd::missing_model(&loaded);
            #[cfg(not(feature = "embed"))]
            let missing_model: Option<(String, String)> = None;
            for e in iris_runner::check_config(&loaded, &HostRegistry::new()) {
                // The runner reports the same missing model as the discovery section
                // failing to assemble; the MODEL_MISSING line says it with its fix.
                let same_fault = matches!(&e, iris_runner::Error::Assembly { key, .. }
                    if key == "context_policy.discovery");
                if same_fault && missing_model.is_some() {
                    continue;
                }
                problems.push((e.code().to_owned(), e.to_string()));
            }
            problems.extend(missing_model);
            // Nothing static is wrong: start everything once, which also catches
            // environment problems such as a missing Docker engine.
            let mut commands = false;
            if problems.is_empty() {
                match interruptible(signals, assemble(cli, &loaded)).await {
                    Ok(env) => {
                        commands = env.command.is_some();
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
            sandbox = sandbox::SandboxCheck::probe(&loaded, commands).await;
        }
    }
    if cli.json {
        let list: Vec<Value> = problems
            .iter()
            .map(|(code, message)| json!({"code": code, "message": message}))
            .collect();
        let mut report = json!({"ok": problems.is_empty(), "problems": list, "notes": notes});
        if let Some(sandbox) = &sandbox {
            report["sandbox"] = sandbox.json();
        }
        if !policy.files.is_empty() {
            report["policy"] = policy_json(&policy);
        }
        print_json(&report);
    } else if problems.is_empty() {
        for policy_line in policy.lines() {
            line(&policy_line);
        }
        for note in &notes {
            line(&format!("note: {note}"));
        }
        for sandbox_line in sandbox.iter().flat_map(sandbox::SandboxCheck::lines) {
            line(&sandbox_line);
        }
        line("ok");
    } else {
        for (code, message) in &problems {
            line(&format!("error[{code}]: {message}"));
        }
        for policy_line in policy.lines() {
            line(&policy_line);
        }
        for sandbox_line in sandbox.iter().flat_map(sandbox::SandboxCheck::lines) {
            line(&sandbox_line);
        }
    }
    Ok(if problems.is_empty() { 0 } else { 1 })
}

/// The policy part of `iris check --json`: the files read and each key they tightened.
fn policy_json(policy: &iris_runner::policy::AppliedPolicy) -> Value {
    let files: Vec<Value> = policy
        .files
        .iter()
        .map(|f| json!({"path": f.path.display().to_string(), "rules": f.rules()}))
        .collect();
    let tightened: Vec<Value> = policy
        .tightened
        .iter()
        .map(|t| {
            json!({"key": t.key, "from": t.from, "to": t.to, "file": t.file.display().to_string()})
        })
        .collect();
    json!({"files": files, "tightened": tightened})
}
