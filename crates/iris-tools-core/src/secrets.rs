//! [`KnownSecrets`]: a shared list of secret values, replaced by [`REDACTED`] wherever
//! they appear in text.
//!
//! The layers that must keep credentials out of what they print, store or send (the MCP
//! client's diagnostics, `iris serve`'s persisted events) hold one. Values shorter than
//! [`MIN_SECRET_CHARS`] are not kept: replacing a `1` would turn "exit status: 1" into
//! nonsense. The longest value is replaced first, so a secret that contains another is
//! replaced whole.
//!
//! ```
//! use iris_tools_core::secrets::KnownSecrets;
//!
//! let secrets = KnownSecrets::new(["sk-live-123456".to_owned(), "1".to_owned()]);
//! let clone = secrets.clone();
//! secrets.add(["added-later-42".to_owned()]);
//! assert_eq!(
//!     clone.replace("key sk-live-123456, added-later-42, exit status: 1"),
//!     "key <redacted>, <redacted>, exit status: 1"
//! );
//! assert_eq!(format!("{secrets:?}"), "KnownSecrets(<2 redacted>)");
//! ```

use std::sync::{Arc, PoisonError, RwLock};

/// What a secret is replaced with.
pub const REDACTED: &str = "<redacted>";

/// Values shorter than this (in characters, surrounding white space aside) are not kept.
pub const MIN_SECRET_CHARS: usize = 6;

/// Secret values to replace in text. Cheap to clone; the clones share one list, so a
/// value [added](KnownSecrets::add) later (a token supplied at run time) is covered by
/// every holder. `Debug` says how many values it holds, never what they are.
#[derive(Clone, Default)]
pub struct KnownSecrets {
    /// Longest first, so a secret that contains another is replaced whole.
    values: Arc<RwLock<Vec<String>>>,
}

impl std::fmt::Debug for KnownSecrets {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let count = self
            .values
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .len();
        write!(f, "KnownSecrets(<{count} redacted>)")
    }
}

impl KnownSecrets {
    /// A list of these values (short and duplicate ones are dropped).
    pub fn new(values: impl IntoIterator<Item = String>) -> Self {
        let secrets = Self::default();
        secrets.add(values);
        secrets
    }

    /// Covers these values too, for this list and every clone of it.
    pub fn add(&self, values: impl IntoIterator<Item = String>) {
        let mut known = self.values.write().unwrap_or_else(PoisonError::into_inner);
        known.extend(
            values
                .into_iter()
                .filter(|v| v.trim().chars().count() >= MIN_SECRET_CHARS),
        );
        known.sort_by(|a, b| b.len().cmp(&a.len()).then_with(|| a.cmp(b)));
        known.dedup();
    }

    /// `text` with every known value replaced by [`REDACTED`].
    pub fn replace(&self, text: &str) -> String {
        let known = self.values.read().unwrap_or_else(PoisonError::into_inner);
        let mut out = text.to_owned();
        for secret in known.iter() {
            if out.contains(secret.as_str()) {
                out = out.replace(secret.as_str(), REDACTED);
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_secret_containing_another_is_replaced_whole() {
        let secrets = KnownSecrets::new(["abcdef".to_owned(), "token-abcdef".to_owned()]);
        assert_eq!(
            secrets.replace("got token-abcdef and abcdef"),
            "got <redacted> and <redacted>"
        );
        // White space does not make a short value long enough.
        secrets.add(["  12  ".to_owned()]);
        assert_eq!(format!("{secrets:?}"), "KnownSecrets(<2 redacted>)");
    }
}
