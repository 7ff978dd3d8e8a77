//! The built-in tool catalog: what a `tools.builtin` key names. Each layer exports its
//! own lines — a YAML key, the model tool name and a constructor over that layer's
//! service ([`iris_files::CATALOG`], [`iris_command::CATALOG`], [`iris_web::CATALOG`])
//! — and this module takes their union, plus the two lines whose tools the runner
//! builds itself (`exec.tool_script`, `human.ask`). Nothing else lists the keys: the
//! YAML parser, the assembly, `iris check` and the error listing the known keys all
//! read [`BuiltinKey::all`].
//!
//! ```
//! use iris_runner::config::BuiltinKey;
//! let key: BuiltinKey = serde_json::from_str(r#""exec.command""#).unwrap();
//! assert_eq!((key.as_str(), key.tool_name()), ("exec.command", "exec_command"));
//! assert!(key.needs_command_service());
//! let err = serde_json::from_str::<BuiltinKey>(r#""exec.shell""#).unwrap_err();
//! assert!(err.to_string().contains("expected one of `file.read`"));
//! ```

use std::fmt;
use std::sync::{Arc, LazyLock};

use iris_command::{CommandBinding, MakeCommandTool};
use iris_files::MakeFileTool;
use iris_script::{RunToolScriptTool, ScriptCallable};
use iris_tools_core::Tool;
use iris_web::MakeWebTool;
use serde::de::{self, Deserializer, Visitor};
use serde::{Deserialize, Serialize, Serializer};

use crate::loop_tool::RunLoopTool;

/// How a built-in tool is made: on which service the assembly started.
#[derive(Clone, Copy)]
pub(crate) enum Make {
    /// A file tool, on the agent's `FileService`.
    Files(MakeFileTool),
    /// A command tool, on the agent's command binding.
    Command(MakeCommandTool),
    /// A web tool, on the agent's Tavily client.
    Web(MakeWebTool),
    /// Code mode, on the command binding with `tools.script.callable`.
    Script(fn(&CommandBinding, ScriptCallable) -> Arc<dyn Tool>),
    /// A loop tool (the run answers its calls).
    Loop(fn() -> RunLoopTool),
}

/// One line of the union.
struct Line {
    key: &'static str,
    name: &'static str,
    make: Make,
}

/// The union, in catalog order: the file tools, the command tools, code mode,
/// `human.ask`, the web tools.
static CATALOG: LazyLock<Vec<Line>> = LazyLock::new(|| {
    let files = iris_files::CATALOG.map(|(key, name, make)| Line {
        key,
        name,
        make: Make::Files(make),
    });
    let command = iris_command::CATALOG.map(|(key, name, make)| Line {
        key,
        name,
        make: Make::Command(make),
    });
    let runner = [
        Line {
            key: "exec.tool_script",
            name: iris_script::RUN_TOOL_SCRIPT,
            make: Make::Script(|binding, callable| {
                Arc::new(RunToolScriptTool::new(binding.clone(), callable))
            }),
        },
        Line {
            key: "human.ask",
            name: crate::loop_tools::ask_question::ASK_QUESTION,
            make: Make::Loop(RunLoopTool::ask_question),
        },
    ];
    let web = iris_web::CATALOG.map(|(key, name, make)| Line {
        key,
        name,
        make: Make::Web(make),
    });
    files
        .into_iter()
        .chain(command)
        .chain(runner)
        .chain(web)
        .collect()
});

/// Every key, in catalog order (what an unknown key's error lists).
static KEYS: LazyLock<Vec<&'static str>> =
    LazyLock::new(|| CATALOG.iter().map(|line| line.key).collect());

/// Every [`BuiltinKey`], in catalog order.
static ALL: LazyLock<Vec<BuiltinKey>> =
    LazyLock::new(|| (0..CATALOG.len()).map(BuiltinKey).collect());

/// A `tools.builtin` key: one line of the built-in tool catalog (see the
/// [module docs](self)). Ordered as the catalog is.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct BuiltinKey(usize);

impl BuiltinKey {
    /// Every key, in the built-in tool catalog's order.
    pub fn all() -> &'static [BuiltinKey] {
        &ALL
    }

    /// The key for a YAML key, e.g. `"file.read"`.
    pub fn parse(key: &str) -> Option<BuiltinKey> {
        CATALOG
            .iter()
            .position(|line| line.key == key)
            .map(BuiltinKey)
    }

    fn line(self) -> &'static Line {
        // A `BuiltinKey` is only made from a position in the catalog.
        &CATALOG[self.0]
    }

    /// The YAML key, e.g. `"file.read"`.
    pub fn as_str(self) -> &'static str {
        self.line().key
    }

    /// The model-facing tool name, e.g. `"read_file"`.
    pub fn tool_name(self) -> &'static str {
        self.line().name
    }

    /// Whether its tool runs on the command service (`exec.command`, `exec.python`,
    /// `exec.tool_script`).
    pub fn needs_command_service(self) -> bool {
        matches!(self.make(), Make::Command(_) | Make::Script(_))
    }

    /// How its tool is made.
    pub(crate) fn make(self) -> Make {
        self.line().make
    }
}

impl fmt::Debug for BuiltinKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "BuiltinKey({:?})", self.as_str())
    }
}

impl fmt::Display for BuiltinKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for BuiltinKey {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for BuiltinKey {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Key;
        impl Visitor<'_> for Key {
            type Value = BuiltinKey;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a built-in tool key")
            }

            fn visit_str<E: de::Error>(self, value: &str) -> Result<BuiltinKey, E> {
                BuiltinKey::parse(value).ok_or_else(|| E::unknown_variant(value, KEYS.as_slice()))
            }
        }
        deserializer.deserialize_str(Key)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    /// Every layer's line is in the union once, in catalog order, and its constructor
    /// makes the tool the line names.
    #[test]
    fn the_union_holds_every_layer_line_once() {
        let keys: Vec<&str> = BuiltinKey::all().iter().map(|k| k.as_str()).collect();
        let mut unique = keys.clone();
        unique.sort_unstable();
        unique.dedup();
        assert_eq!(unique.len(), keys.len(), "{keys:?}");
        let files = Arc::new(iris_files::FileService::default());
        let client = Arc::new(iris_web::TavilyClient::from_env());
        for key in BuiltinKey::all() {
            assert_eq!(BuiltinKey::parse(key.as_str()), Some(*key));
            let made = match key.make() {
                Make::Files(make) => make(&files),
                Make::Web(make) => make(&client),
                Make::Loop(make) => Arc::new(make()),
                // Needs a prepared command service: the assembly tests build them.
                Make::Command(_) | Make::Script(_) => continue,
            };
            assert_eq!(made.definition().name, key.tool_name(), "{key}");
        }
        assert_eq!(BuiltinKey::parse("exec.shell"), None);
    }
}
