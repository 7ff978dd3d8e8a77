//! Typed parsing of raw tool input, with the same verdicts as the published schemas.
//!
//! Each tool's `validate_input` parses through [`Fields`], so a model gets one clear
//! `INVALID_INPUT` message naming the field, and the bounds live next to the schema
//! text that declares them.

use serde_json::{Map, Value};

use iris_tools_core::{ToolErrorInfo, codes};

/// Reads the fields of one input object and rejects unknown keys.
pub(crate) struct Fields<'a> {
    obj: &'a Map<String, Value>,
}

pub(crate) fn invalid(message: impl Into<String>) -> ToolErrorInfo {
    ToolErrorInfo::new(codes::INVALID_INPUT, message)
}

impl<'a> Fields<'a> {
    /// Checks that `raw` is an object holding only `allowed` keys.
    pub(crate) fn new(raw: &'a Value, allowed: &[&str]) -> Result<Self, ToolErrorInfo> {
        let obj = raw
            .as_object()
            .ok_or_else(|| invalid("the input must be a JSON object"))?;
        if let Some(unknown) = obj.keys().find(|k| !allowed.contains(&k.as_str())) {
            return Err(invalid(format!(
                "unknown field `{unknown}`; expected one of: {}",
                allowed.join(", ")
            )));
        }
        Ok(Self { obj })
    }

    fn get(&self, key: &str) -> Option<&'a Value> {
        self.obj.get(key)
    }

    /// A required string; `non_empty` rejects `""`.
    pub(crate) fn required_str(&self, key: &str, non_empty: bool) -> Result<String, ToolErrorInfo> {
        match self.get(key) {
            None => Err(invalid(format!("`{key}` is required"))),
            Some(Value::String(s)) if non_empty && s.is_empty() => {
                Err(invalid(format!("`{key}` must not be empty")))
            }
            Some(Value::String(s)) => Ok(s.clone()),
            Some(other) => Err(invalid(format!(
                "`{key}` must be a string, got {}",
                kind(other)
            ))),
        }
    }

    /// An optional string; `null` counts as absent only when `nullable`.
    pub(crate) fn optional_str(
        &self,
        key: &str,
        nullable: bool,
    ) -> Result<Option<String>, ToolErrorInfo> {
        match self.get(key) {
            None => Ok(None),
            Some(Value::Null) if nullable => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(other) => Err(invalid(format!(
                "`{key}` must be a string{}, got {}",
                if nullable { " or null" } else { "" },
                kind(other)
            ))),
        }
    }

    /// An optional boolean.
    pub(crate) fn optional_bool(&self, key: &str) -> Result<Option<bool>, ToolErrorInfo> {
        match self.get(key) {
            None => Ok(None),
            Some(Value::Bool(b)) => Ok(Some(*b)),
            Some(other) => Err(invalid(format!(
                "`{key}` must be a boolean, got {}",
                kind(other)
            ))),
        }
    }

    /// An optional integer in `min..=max`; `null` counts as absent only when
    /// `nullable`. Integral floats such as `10.0` are accepted because JSON Schema
    /// counts them as integers too.
    pub(crate) fn optional_int(
        &self,
        key: &str,
        min: u64,
        max: u64,
        nullable: bool,
    ) -> Result<Option<u64>, ToolErrorInfo> {
        let value = match self.get(key) {
            None => return Ok(None),
            Some(Value::Null) if nullable => return Ok(None),
            Some(v) => v,
        };
        let range = || {
            if max == u64::MAX {
                format!("at least {min}")
            } else {
                format!("between {min} and {max}")
            }
        };
        let Value::Number(n) = value else {
            return Err(invalid(format!(
                "`{key}` must be an integer{}, got {}",
                if nullable { " or null" } else { "" },
                kind(value)
            )));
        };
        let int = if let Some(u) = n.as_u64() {
            Some(u)
        } else if n.as_i64().is_some() {
            // Negative: below every allowed minimum.
            return Err(invalid(format!("`{key}` must be {}, got {n}", range())));
        } else {
            n.as_f64().and_then(integral_u64)
        };
        match int {
            Some(u) if (min..=max).contains(&u) => Ok(Some(u)),
            Some(_) => Err(invalid(format!("`{key}` must be {}, got {n}", range()))),
            None if n.as_f64().is_some_and(|f| f.fract() == 0.0) => {
                Err(invalid(format!("`{key}` must be {}, got {n}", range())))
            }
            None => Err(invalid(format!("`{key}` must be an integer, got {n}"))),
        }
    }
}

/// `f` as a `u64` when it is a non-negative whole number that fits.
fn integral_u64(f: f64) -> Option<u64> {
    // 2^64 as f64; anything at or above it does not fit.
    const LIMIT: f64 = 18_446_744_073_709_551_616.0;
    if f.is_finite() && f.fract() == 0.0 && (0.0..LIMIT).contains(&f) {
        // The range check above makes the conversion exact.
        Some(f as u64)
    } else {
        None
    }
}

fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// Clamps a `u64` from validated input to `usize` (inputs are bounded far below).
pub(crate) fn to_usize(v: u64) -> usize {
    usize::try_from(v).unwrap_or(usize::MAX)
}
