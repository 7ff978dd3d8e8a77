//! Parameter types of the file tools whose JSON contract serde's and schemars' own
//! types do not express: each type's schema and its parse give the same verdict, so a
//! value the published schema accepts is exactly a value the tool parses.
//!
//! The schemas are inline (`Option<T>` becomes `"type": [..., "null"]`) and carry no
//! `format`, so models see plain JSON types.

use std::borrow::Cow;
use std::fmt;

use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde::de::{self, Deserializer, Unexpected, Visitor};
use serde::{Deserialize, Serialize, Serializer};

/// A string that is not empty (`"type": "string", "minLength": 1`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct NonEmptyString(String);

impl NonEmptyString {
    /// The text.
    pub(crate) fn as_str(&self) -> &str {
        &self.0
    }

    /// `.`, the workspace root: the default `path` of `list_files` and `grep_search`.
    pub(crate) fn workspace_root() -> Self {
        Self(".".to_owned())
    }
}

impl Serialize for NonEmptyString {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.0)
    }
}

impl<'de> Deserialize<'de> for NonEmptyString {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        if text.is_empty() {
            return Err(de::Error::invalid_value(
                Unexpected::Str(""),
                &"a non-empty string",
            ));
        }
        Ok(Self(text))
    }
}

impl JsonSchema for NonEmptyString {
    fn inline_schema() -> bool {
        true
    }

    fn schema_name() -> Cow<'static, str> {
        "NonEmptyString".into()
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({"type": "string", "minLength": 1})
    }
}

/// A string of at most `MAX` characters (Unicode scalar values, as JSON Schema's
/// `maxLength` counts them): `"type": "string", "maxLength": MAX`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct BoundedString<const MAX: usize>(String);

impl<const MAX: usize> BoundedString<MAX> {
    /// The text.
    pub(crate) fn as_str(&self) -> &str {
        &self.0
    }
}

impl<const MAX: usize> Serialize for BoundedString<MAX> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.0)
    }
}

impl<'de, const MAX: usize> Deserialize<'de> for BoundedString<MAX> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        let chars = text.chars().count();
        if chars > MAX {
            return Err(de::Error::invalid_length(
                chars,
                &format!("a string of at most {MAX} characters").as_str(),
            ));
        }
        Ok(Self(text))
    }
}

impl<const MAX: usize> JsonSchema for BoundedString<MAX> {
    fn inline_schema() -> bool {
        true
    }

    fn schema_name() -> Cow<'static, str> {
        format!("StringAtMost{MAX}").into()
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({"type": "string", "maxLength": MAX})
    }
}

/// A whole number from 0 to `MAX` (`"type": "integer", "minimum": 0, "maximum": MAX`).
///
/// The maximum is published even for `u64::MAX`: a number past it (JSON allows
/// `18446744073709551616`) is refused by the schema and by the parse alike, with the
/// real bound in the message.
///
/// Integral floats such as `3.0` are accepted, because JSON Schema counts them as
/// integers too; `1.5`, negative numbers and anything above `MAX` are not.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct UInt<const MAX: u64 = { u64::MAX }>(u64);

impl<const MAX: u64> UInt<MAX> {
    /// `value`, when it is at most `MAX`.
    pub(crate) const fn new(value: u64) -> Option<Self> {
        if value <= MAX {
            Some(Self(value))
        } else {
            None
        }
    }

    /// The number as a `usize` (saturating; the bounds in use are far below).
    pub(crate) fn to_usize(self) -> usize {
        usize::try_from(self.0).unwrap_or(usize::MAX)
    }
}

impl<const MAX: u64> Serialize for UInt<MAX> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_u64(self.0)
    }
}

impl<'de, const MAX: u64> Deserialize<'de> for UInt<MAX> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(UIntVisitor::<MAX>)
    }
}

struct UIntVisitor<const MAX: u64>;

impl<const MAX: u64> UIntVisitor<MAX> {
    fn checked<E: de::Error>(
        &self,
        value: u64,
        unexpected: Unexpected<'_>,
    ) -> Result<UInt<MAX>, E> {
        UInt::new(value).ok_or_else(|| E::invalid_value(unexpected, self))
    }
}

impl<const MAX: u64> Visitor<'_> for UIntVisitor<MAX> {
    type Value = UInt<MAX>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "an integer between 0 and {MAX}")
    }

    fn visit_u64<E: de::Error>(self, value: u64) -> Result<Self::Value, E> {
        self.checked(value, Unexpected::Unsigned(value))
    }

    fn visit_i64<E: de::Error>(self, value: i64) -> Result<Self::Value, E> {
        match u64::try_from(value) {
            Ok(value) => self.visit_u64(value),
            Err(_) => Err(E::invalid_value(Unexpected::Signed(value), &self)),
        }
    }

    fn visit_f64<E: de::Error>(self, value: f64) -> Result<Self::Value, E> {
        // 2^64 as f64; anything at or above it does not fit.
        const LIMIT: f64 = 18_446_744_073_709_551_616.0;
        if value.is_finite() && value.fract() == 0.0 && (0.0..LIMIT).contains(&value) {
            // The range check above makes the conversion exact.
            self.checked(value as u64, Unexpected::Float(value))
        } else {
            Err(E::invalid_value(Unexpected::Float(value), &self))
        }
    }
}

impl<const MAX: u64> JsonSchema for UInt<MAX> {
    fn inline_schema() -> bool {
        true
    }

    fn schema_name() -> Cow<'static, str> {
        if MAX == u64::MAX {
            "UInt".into()
        } else {
            format!("UIntAtMost{MAX}").into()
        }
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({"type": "integer", "minimum": 0, "maximum": MAX})
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use serde_json::{Value, json};

    use super::*;

    fn parse<T: for<'de> Deserialize<'de>>(value: Value) -> Option<T> {
        T::deserialize(&value).ok()
    }

    #[test]
    fn uint_verdicts() {
        for (value, expect) in [
            (json!(0), Some(0)),
            (json!(1000), Some(1000)),
            (json!(1000.0), Some(1000)),
            (json!(3.0), Some(3)),
            (json!(1001), None),
            (json!(1001.0), None),
            (json!(-1), None),
            (json!(-0.0), Some(0)),
            (json!(1.5), None),
            (json!("3"), None),
            (Value::Null, None),
            (json!(true), None),
        ] {
            assert_eq!(
                parse::<UInt<1000>>(value.clone()),
                expect.and_then(UInt::new),
                "{value}"
            );
        }
        assert_eq!(
            parse::<UInt>(json!(18_446_744_073_709_551_615_u64)),
            UInt::new(u64::MAX)
        );
        assert!(parse::<UInt>(json!(1e20)).is_none());
    }

    #[test]
    fn bounded_string_verdicts() {
        let ok = |v: Value| parse::<BoundedString<3>>(v).map(|s| s.as_str().to_owned());
        assert_eq!(ok(json!("abc")).as_deref(), Some("abc"));
        assert_eq!(ok(json!("日本語")).as_deref(), Some("日本語"));
        assert_eq!(ok(json!("")).as_deref(), Some(""));
        assert_eq!(ok(json!("abcd")), None);
        assert_eq!(ok(json!(3)), None);
        let err = BoundedString::<3>::deserialize(&json!("abcd")).unwrap_err();
        assert_eq!(
            err.to_string(),
            "invalid length 4, expected a string of at most 3 characters"
        );
    }

    #[test]
    fn past_u64_the_message_names_the_real_bound() {
        let huge: Value = serde_json::from_str("18446744073709551616").unwrap();
        let err = UInt::<{ u64::MAX }>::deserialize(&huge).unwrap_err();
        let message = err.to_string();
        assert!(
            message.ends_with("expected an integer between 0 and 18446744073709551615"),
            "{message}"
        );
    }

    #[test]
    fn non_empty_verdicts() {
        assert_eq!(
            parse::<NonEmptyString>(json!("a"))
                .as_ref()
                .map(NonEmptyString::as_str),
            Some("a")
        );
        for value in [json!(""), json!(7), Value::Null, json!(["a"])] {
            assert!(parse::<NonEmptyString>(value.clone()).is_none(), "{value}");
        }
    }

    #[test]
    fn schemas_are_inline_and_plain() {
        let schema = |s: Schema| Value::from(s);
        let mut generator = SchemaGenerator::default();
        assert_eq!(
            schema(UInt::<1000>::json_schema(&mut generator)),
            json!({"type": "integer", "minimum": 0, "maximum": 1000})
        );
        assert_eq!(
            schema(UInt::<{ u64::MAX }>::json_schema(&mut generator)),
            json!({"type": "integer", "minimum": 0, "maximum": u64::MAX})
        );
        assert_eq!(
            schema(generator.subschema_for::<Option<UInt>>()),
            json!({"type": ["integer", "null"], "minimum": 0, "maximum": u64::MAX})
        );
        assert_eq!(
            schema(generator.subschema_for::<Option<BoundedString<5>>>()),
            json!({"type": ["string", "null"], "maxLength": 5})
        );
    }
}
