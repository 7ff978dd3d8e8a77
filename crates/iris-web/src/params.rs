//! The parameter types of the two tools: each one publishes its JSON Schema bounds
//! and checks them while it is parsed (the executor validates the schema first; the
//! parse also refuses what a schema cannot say: blank strings, `5.0` as an integer,
//! repeated URLs). A broken value is refused with the message of [`crate::input`],
//! which names the field first so [`crate::input::refine`] can put it in
//! `details.field`.
//!
//! Every type serializes to its normalized form (trimmed, defaults filled in): that is
//! the validated input the executor hands on (`normalize_input`).

use std::borrow::Cow;
use std::marker::PhantomData;

use reqwest::Url;
use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde::de::Error as _;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;

use crate::error::one_line;
use crate::input::{integer_in, invalid, kind, non_blank_string, string_list};
use crate::wire::TimeRange;
use crate::{
    DEFAULT_MAX_RESULTS, MAX_EXCLUDE_DOMAINS, MAX_INCLUDE_DOMAINS, MAX_MAX_RESULTS, MAX_URLS,
    MIN_MAX_RESULTS, MIN_URLS,
};

/// Parses a parameter from its JSON value with one of [`crate::input`]'s checks, which
/// report a broken value as an `INVALID_INPUT` error whose message names the field.
fn parse_value<'de, D, T>(
    deserializer: D,
    check: impl FnOnce(&Value) -> Result<T, iris_tools_core::ToolErrorInfo>,
) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
{
    let value = Value::deserialize(deserializer)?;
    check(&value).map_err(|info| D::Error::custom(info.message))
}

/// Implements `JsonSchema` for a parameter type whose schema is written out, inlined
/// into the tool's input schema.
macro_rules! inline_schema {
    ($ty:ty, $name:literal, $schema:expr) => {
        impl JsonSchema for $ty {
            fn schema_name() -> Cow<'static, str> {
                Cow::Borrowed($name)
            }

            fn inline_schema() -> bool {
                true
            }

            fn json_schema(_: &mut SchemaGenerator) -> Schema {
                $schema
            }
        }
    };
}

/// `query` of `web_search` (and, as `Option<Query>`, of `web_fetch`): a string that is
/// not blank, trimmed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(transparent)]
pub(crate) struct Query(String);

impl Query {
    pub(crate) fn into_string(self) -> String {
        self.0
    }
}

impl<'de> Deserialize<'de> for Query {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        parse_value(deserializer, |v| non_blank_string("query", v)).map(Query)
    }
}

inline_schema!(
    Query,
    "Query",
    json_schema!({"type": "string", "pattern": "\\S"})
);

/// `max_results` of `web_search`: a strict integer in 1–20 (`5.0` and `"5"` are
/// refused), 10 when left out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(transparent)]
pub(crate) struct MaxResults(u32);

impl MaxResults {
    pub(crate) fn get(self) -> u32 {
        self.0
    }
}

impl Default for MaxResults {
    fn default() -> Self {
        Self(DEFAULT_MAX_RESULTS)
    }
}

impl<'de> Deserialize<'de> for MaxResults {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        parse_value(deserializer, |v| {
            integer_in("max_results", v, MIN_MAX_RESULTS, MAX_MAX_RESULTS)
        })
        .map(MaxResults)
    }
}

inline_schema!(
    MaxResults,
    "MaxResults",
    json_schema!({
        "type": "integer",
        "minimum": MIN_MAX_RESULTS,
        "maximum": MAX_MAX_RESULTS,
    })
);

/// `time_range` of `web_search`: `null` (any time, the default) or a [`TimeRange`]
/// name. The schema lists `null` among the names, which `Option<TimeRange>` would not.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct Period(Option<TimeRange>);

impl Period {
    pub(crate) fn get(self) -> Option<TimeRange> {
        self.0
    }
}

impl Serialize for Period {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.0.map(TimeRange::as_str).serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for Period {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        parse_value(deserializer, |value| match value {
            Value::Null => Ok(None),
            Value::String(name) => TimeRange::parse(name).map(Some).ok_or_else(|| {
                invalid(
                    "time_range",
                    format!(
                        "`time_range` must be null, \"day\", \"week\", \"month\" or \"year\", got \"{}\"",
                        name.escape_debug()
                    ),
                )
            }),
            other => Err(invalid(
                "time_range",
                format!(
                    "`time_range` must be null or a string, got {}",
                    kind(other)
                ),
            )),
        })
        .map(Period)
    }
}

inline_schema!(
    Period,
    "TimeRange",
    json_schema!({
        "type": ["string", "null"],
        "enum": ["day", "week", "month", "year", null],
    })
);

/// Which domain list a [`Domains`] is: its field name and its most entries.
pub(crate) trait DomainField {
    const FIELD: &'static str;
    const MAX: usize;
}

/// `include_domains` of `web_search`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Include;

impl DomainField for Include {
    const FIELD: &'static str = "include_domains";
    const MAX: usize = MAX_INCLUDE_DOMAINS;
}

/// `exclude_domains` of `web_search`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Exclude;

impl DomainField for Exclude {
    const FIELD: &'static str = "exclude_domains";
    const MAX: usize = MAX_EXCLUDE_DOMAINS;
}

/// A domain list of `web_search`: at most `F::MAX` non-blank strings, each trimmed;
/// empty when left out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Domains<F>(Vec<String>, PhantomData<F>);

impl<F> Domains<F> {
    pub(crate) fn into_vec(self) -> Vec<String> {
        self.0
    }
}

impl<F> Default for Domains<F> {
    fn default() -> Self {
        Self(Vec::new(), PhantomData)
    }
}

impl<F> Serialize for Domains<F> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.0.serialize(serializer)
    }
}

impl<'de, F: DomainField> Deserialize<'de> for Domains<F> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        parse_value(deserializer, |v| string_list(F::FIELD, v, F::MAX))
            .map(|domains| Self(domains, PhantomData))
    }
}

impl<F: DomainField> JsonSchema for Domains<F> {
    fn schema_name() -> Cow<'static, str> {
        Cow::Borrowed(F::FIELD)
    }

    fn inline_schema() -> bool {
        true
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "type": "array",
            "items": {"type": "string", "pattern": "\\S"},
            "maxItems": F::MAX,
        })
    }
}

/// `urls` of `web_fetch`: 1–20 distinct `http`/`https` URLs with a host, as given
/// (trimmed).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(transparent)]
pub(crate) struct Urls(Vec<String>);

impl Urls {
    pub(crate) fn into_vec(self) -> Vec<String> {
        self.0
    }
}

impl<'de> Deserialize<'de> for Urls {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        parse_value(deserializer, parse_urls).map(Urls)
    }
}

inline_schema!(
    Urls,
    "Urls",
    json_schema!({
        "type": "array",
        "items": {"type": "string", "format": "uri", "pattern": "^[Hh][Tt][Tt][Pp][Ss]?://\\S"},
        "minItems": MIN_URLS,
        // No `uniqueItems`: OpenAI strict mode refuses it. The parse refuses repeated
        // URLs instead.
        "maxItems": MAX_URLS,
    })
);

fn parse_urls(value: &Value) -> Result<Vec<String>, iris_tools_core::ToolErrorInfo> {
    let Value::Array(items) = value else {
        return Err(invalid(
            "urls",
            format!("`urls` must be an array of URLs, got {}", kind(value)),
        ));
    };
    if !(MIN_URLS..=MAX_URLS).contains(&items.len()) {
        return Err(invalid(
            "urls",
            format!(
                "`urls` has {} items; give {MIN_URLS} to {MAX_URLS}",
                items.len()
            ),
        ));
    }
    let mut urls: Vec<String> = Vec::with_capacity(items.len());
    let mut seen: Vec<Url> = Vec::with_capacity(items.len());
    for (i, item) in items.iter().enumerate() {
        let field = format!("urls[{i}]");
        let text = non_blank_string(&field, item)?;
        let url = Url::parse(&text).map_err(|e| {
            invalid(
                &field,
                format!("`{field}` is not a URL ({e}): `{}`", one_line(&text, 200)),
            )
        })?;
        if !matches!(url.scheme(), "http" | "https") {
            return Err(invalid(
                &field,
                format!(
                    "`{field}` must be an http or https URL, not `{}`",
                    url.scheme()
                ),
            ));
        }
        if url.host_str().is_none_or(str::is_empty) {
            return Err(invalid(&field, format!("`{field}` has no host")));
        }
        if let Some(first) = seen.iter().position(|u| *u == url) {
            return Err(invalid(
                &field,
                format!("`{field}` repeats `urls[{first}]`; list each URL once"),
            ));
        }
        seen.push(url);
        urls.push(text);
    }
    Ok(urls)
}
