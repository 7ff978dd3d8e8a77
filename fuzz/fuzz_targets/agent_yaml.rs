//! The agent YAML (`iris.yaml`) as `iris_runner::AgentConfig::load_with_env` reads it
//! (the environment left out), and the subagent catalog YAML `tools.subagent` names
//! (`iris_skill::SubagentCatalog::parse`).
//!
//! The loader only reads from a path, so each input is written to one scratch file
//! first.
//!
//! Invariants: errors carry a stable code of the crate and a message; a loaded config
//! has an absolute workspace and absolute referenced paths; a parsed catalog's default
//! and every selector can be looked up.
#![no_main]

use std::path::PathBuf;
use std::sync::LazyLock;

use iris_fuzz::{check_error, scratch_dir, write};
use iris_runner::AgentConfig;
use iris_skill::SubagentCatalog;
use libfuzzer_sys::fuzz_target;

static DIR: LazyLock<PathBuf> = LazyLock::new(|| scratch_dir("agent_yaml"));

fuzz_target!(|data: &[u8]| {
    let file = DIR.join("iris.yaml");
    write(&file, data);
    match AgentConfig::load_with_env(&file, false) {
        Ok(loaded) => {
            assert!(loaded.workspace.is_absolute());
            assert_eq!(loaded.config.workspace.as_ref(), Some(&loaded.workspace));
            if let Some(sub) = &loaded.config.tools.subagent {
                assert!(sub.is_absolute(), "tools.subagent {sub:?} was not resolved");
            }
            if let Some(mcp) = &loaded.config.mcp {
                assert!(
                    mcp.path.is_absolute(),
                    "mcp.path {:?} was not resolved",
                    mcp.path
                );
            }
        }
        Err(e) => check_error(e.code(), &e.to_string()),
    }

    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    match SubagentCatalog::parse(text, DIR.join("agents.yaml")) {
        Ok(catalog) => {
            let default = catalog.default_selector().to_owned();
            assert!(
                catalog.get(&default).is_some(),
                "default `{default}` is not listed"
            );
            assert!(catalog.select(None).is_ok());
            for entry in catalog.entries() {
                assert!(catalog.get(&entry.selector).is_some());
                assert!(
                    entry.path.is_absolute(),
                    "{:?} was not resolved",
                    entry.path
                );
            }
            if let Err(e) = catalog.select(Some("no-such-agent-\u{1}")) {
                check_error(e.code(), &e.to_string());
            }
        }
        Err(e) => check_error(e.code(), &e.to_string()),
    }
});
