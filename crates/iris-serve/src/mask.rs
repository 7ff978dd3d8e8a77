//! Keeping secrets out of what the server stores and sends: every event it persists and
//! every run it shows passes through one [`Masker`], which replaces known secret values
//! with `<redacted>` wherever they appear in a string.
//!
//! Known secrets: the values of the host's credential variables — the served agents'
//! model keys (`model.api_key_env`, or the provider's default variable), the bearer
//! token's variable, the PostgreSQL URL's variable, every `IRIS_PROVIDER_API_KEYS__*`,
//! and any variable whose name ends in `_KEY`, `_TOKEN`, `_SECRET` or `_PASSWORD` — and
//! every secret a human gives a run over the API (`{"answer": "secret"}`). As in the MCP
//! layer's redactor, values shorter than
//! [`MIN_SECRET_CHARS`](iris_tools_core::secrets::MIN_SECRET_CHARS) are not replaced (a `1`
//! would turn every number into nonsense).

use iris_tools_core::secrets::KnownSecrets;
use serde_json::Value;

/// Suffixes of variable names whose values are secrets.
const SECRET_SUFFIXES: [&str; 4] = ["_KEY", "_TOKEN", "_SECRET", "_PASSWORD"];

/// Replaces known secret values; clones share one list. `Debug` never shows a value.
#[derive(Clone, Debug, Default)]
pub(crate) struct Masker {
    secrets: KnownSecrets,
}

/// Whether a variable's name says it holds a secret.
fn is_secret_name(name: &str) -> bool {
    let upper = name.to_ascii_uppercase();
    upper.starts_with("IRIS_PROVIDER_API_KEYS__")
        || SECRET_SUFFIXES.iter().any(|s| upper.ends_with(s))
}

impl Masker {
    /// A masker over this process's credential variables plus the variables named in
    /// `vars` (a token's, a database URL's, a model key's).
    pub(crate) fn from_env(vars: &[String]) -> Self {
        let masker = Self::default();
        masker.add(
            std::env::vars()
                .filter(|(name, _)| is_secret_name(name) || vars.contains(name))
                .map(|(_, value)| value),
        );
        masker
    }

    /// Covers these values too, for every clone.
    pub(crate) fn add(&self, values: impl IntoIterator<Item = String>) {
        self.secrets.add(values);
    }

    /// `text` with every known secret replaced.
    pub(crate) fn text(&self, text: &str) -> String {
        self.secrets.replace(text)
    }

    /// Every string in `value` (keys too) masked.
    pub(crate) fn value(&self, value: Value) -> Value {
        match value {
            Value::String(s) => Value::String(self.text(&s)),
            Value::Array(items) => Value::Array(items.into_iter().map(|v| self.value(v)).collect()),
            Value::Object(map) => Value::Object(
                map.into_iter()
                    .map(|(k, v)| (self.text(&k), self.value(v)))
                    .collect(),
            ),
            other => other,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_values_are_replaced_everywhere_and_short_ones_are_not() {
        let masker = Masker::default();
        masker.add(["sk-live-123456".to_owned(), "12".to_owned()]);
        let masked = masker.value(serde_json::json!({
            "text": "key sk-live-123456 and 12",
            "list": ["sk-live-123456"],
            "sk-live-123456": 12,
        }));
        assert_eq!(
            masked,
            serde_json::json!({
                "text": "key <redacted> and 12",
                "list": ["<redacted>"],
                "<redacted>": 12,
            })
        );
        let debug = format!("{masker:?}");
        assert!(!debug.contains("sk-live"), "{debug}");
    }

    #[test]
    fn secret_names_are_recognised() {
        for name in [
            "OPENAI_API_KEY",
            "IRIS_PROVIDER_API_KEYS__TAVILY",
            "GH_TOKEN",
            "db_password",
        ] {
            assert!(is_secret_name(name), "{name}");
        }
        for name in ["PATH", "HOME", "KEYBOARD", "TOKENS_PER_TURN"] {
            assert!(!is_secret_name(name), "{name}");
        }
    }
}
