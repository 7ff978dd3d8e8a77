//! Model-facing names of MCP tools: `mcp__<server>__<tool>`.
//!
//! Rules:
//! - characters outside `[A-Za-z0-9_]` are replaced by `_` (one per character, so a
//!   unicode name keeps its length);
//! - a name that needed a replacement, or is longer than 64 characters, gets a stable
//!   identity suffix `_<8 hex>` computed from the *raw* server and tool names, and is
//!   truncated so the whole stays within 64 characters;
//! - names never collide: a name already taken (by another MCP tool or any tool in the
//!   registry) gets a suffix, and the suffix is re-derived with a counter until free.
//!
//! The raw wire name is kept separately for calls; read the published name from the
//! catalog ([`crate::MCPCatalogSnapshot`]) rather than rebuilding it.

use std::collections::BTreeSet;

use iris_tools_core::definition::MAX_TOOL_NAME_LEN;

/// The prefix of every MCP tool name.
pub const MCP_TOOL_PREFIX: &str = "mcp__";

/// Replaces every character outside `[A-Za-z0-9_]` with `_`.
///
/// ```
/// assert_eq!(iris_mcp::naming::sanitize("get-weather.v2"), "get_weather_v2");
/// assert_eq!(iris_mcp::naming::sanitize("天气"), "__");
/// ```
pub fn sanitize(raw: &str) -> String {
    raw.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// 64-bit FNV-1a: a fixed, documented hash, so suffixes never change between builds
/// or Rust versions (unlike `std`'s `DefaultHasher`).
pub fn fnv1a64(bytes: &[u8]) -> u64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for b in bytes {
        hash ^= u64::from(*b);
        hash = hash.wrapping_mul(0x0100_0000_01b3);
    }
    hash
}

/// The stable identity suffix of a raw (server, tool) pair: 8 lower-case hex digits.
/// `attempt` > 0 re-derives it after a collision.
pub fn identity_suffix(server: &str, tool: &str, attempt: u32) -> String {
    let mut key = Vec::with_capacity(server.len() + tool.len() + 8);
    key.extend_from_slice(server.as_bytes());
    key.push(0);
    key.extend_from_slice(tool.as_bytes());
    if attempt > 0 {
        key.push(0);
        key.extend_from_slice(attempt.to_string().as_bytes());
    }
    let h = fnv1a64(&key);
    // Fold to 32 bits so the suffix stays short; collisions are resolved anyway.
    format!("{:08x}", (h >> 32) ^ (h & 0xffff_ffff))
}

/// The name of one tool without regard to other names: `mcp__<server>__<tool>`,
/// sanitized, with a suffix when it was changed or is too long.
///
/// ```
/// use iris_mcp::naming::tool_name;
/// assert_eq!(tool_name("time", "get_current_time"), "mcp__time__get_current_time");
/// let n = tool_name("my.server", "get-weather");
/// assert!(n.starts_with("mcp__my_server__get_weather_") && n.len() == 5 + 9 + 2 + 11 + 1 + 8);
/// assert!(tool_name("s", &"a".repeat(80)).len() <= 64);
/// ```
pub fn tool_name(server: &str, tool: &str) -> String {
    candidate(server, tool, 0, false)
}

fn candidate(server: &str, tool: &str, attempt: u32, force_suffix: bool) -> String {
    let plain = format!("{MCP_TOOL_PREFIX}{server}__{tool}");
    let clean = sanitize(&plain);
    let needs_suffix = force_suffix || clean != plain || clean.len() > MAX_TOOL_NAME_LEN;
    if !needs_suffix {
        return clean;
    }
    let suffix = identity_suffix(server, tool, attempt);
    // `clean` is ASCII, so byte and character lengths agree.
    let keep = MAX_TOOL_NAME_LEN - suffix.len() - 1;
    let head = &clean[..clean.len().min(keep)];
    format!("{head}_{suffix}")
}

/// Assigns names to many tools at once, avoiding `taken` (names already in the
/// registry) and each other. Input order decides who keeps the plain name when two
/// collide, so callers pass tools in a deterministic order (server name, then the
/// server's listing order).
#[derive(Debug, Default)]
pub struct NameAllocator {
    taken: BTreeSet<String>,
}

impl NameAllocator {
    /// An allocator that will avoid `taken`.
    pub fn new(taken: impl IntoIterator<Item = String>) -> Self {
        Self {
            taken: taken.into_iter().collect(),
        }
    }

    /// A free name for (server, tool), reserved from now on.
    ///
    /// ```
    /// use iris_mcp::naming::NameAllocator;
    /// let mut names = NameAllocator::new(["mcp__a__b__c".to_owned()]);
    /// let n = names.allocate("a__b", "c"); // same plain name as the taken one
    /// assert_ne!(n, "mcp__a__b__c");
    /// assert_ne!(names.allocate("a", "b__c"), n);
    /// ```
    pub fn allocate(&mut self, server: &str, tool: &str) -> String {
        let first = candidate(server, tool, 0, false);
        if self.taken.insert(first.clone()) {
            return first;
        }
        let mut attempt = 0;
        loop {
            let name = candidate(server, tool, attempt, true);
            if self.taken.insert(name.clone()) {
                return name;
            }
            attempt += 1;
        }
    }
}
