//! The arguments of `#[tool(...)]`.

use std::collections::HashSet;

use proc_macro2::{Span, TokenStream};
use syn::meta::ParseNestedMeta;
use syn::parse::Parser;
use syn::punctuated::Punctuated;
use syn::{Ident, Lit, LitBool, LitStr, Token};

use crate::ctxt::Errors;

/// Every key `#[tool(...)]` accepts, in the order the docs list them.
const KEYS: &[&str] = &[
    "name",
    "description",
    "capabilities",
    "group",
    "deferred",
    "examples",
    "tags",
    "version",
    "deprecated",
    "deprecation_message",
    "concurrency_safe",
    "timeout",
    "aliases",
    "execution_mode",
    "auto_allow",
    "idempotent",
    "background",
    "context_retention",
    "timeout_owner",
    "metadata",
    "normalize_input",
    "input_error",
    "crate",
];

/// Capability names and the `ToolCapability` variants they map to.
const CAPABILITIES: &[(&str, &str)] = &[
    ("read", "Read"),
    ("write", "Write"),
    ("execute", "Execute"),
    ("network", "Network"),
    ("mcp", "Mcp"),
    ("agent", "Agent"),
];

/// Where a sync body runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ExecutionMode {
    /// In the calling task (the default).
    Inline,
    /// On tokio's blocking pool.
    Thread,
}

/// The parsed `#[tool(...)]` arguments. Values are already validated.
#[derive(Default)]
pub(crate) struct ToolArgs {
    pub(crate) name: Option<LitStr>,
    pub(crate) description: Option<String>,
    /// `ToolCapability` variant names, e.g. `Read`.
    pub(crate) capabilities: Vec<Ident>,
    pub(crate) group: Option<String>,
    pub(crate) deferred: bool,
    pub(crate) examples: Vec<serde_json::Value>,
    pub(crate) tags: Vec<String>,
    pub(crate) version: Option<String>,
    pub(crate) deprecated: bool,
    pub(crate) deprecation_message: Option<LitStr>,
    pub(crate) concurrency_safe: Option<bool>,
    pub(crate) timeout_ms: Option<u64>,
    pub(crate) aliases: Vec<String>,
    pub(crate) execution_mode: Option<(ExecutionMode, Span)>,
    pub(crate) auto_allow: bool,
    pub(crate) idempotent: bool,
    pub(crate) background: bool,
    /// `ContextRetention` variant name (`Observation`); `None` keeps the default.
    pub(crate) context_retention: Option<Ident>,
    /// `ToolTimeoutOwner` variant name (`Tool`); `None` keeps the default.
    pub(crate) timeout_owner: Option<Ident>,
    /// Extra `metadata` string entries, e.g. `metadata(yaml_key = "file.read")`.
    pub(crate) metadata: Vec<(String, String)>,
    /// `normalize_input`: the validated input's JSON is the parsed input serialized
    /// again (defaults filled in, values as the parameter types normalize them), so
    /// permission checks, hooks and approvals see what the body receives.
    pub(crate) normalize_input: bool,
    /// `input_error = "path"`: a `fn(&ToolDefinition, &Value, ToolErrorInfo) ->
    /// ToolErrorInfo` that refines the error of a failed typed parse (its message, a
    /// `details.field`), given the raw input.
    pub(crate) input_error: Option<syn::Path>,
    pub(crate) krate: Option<syn::Path>,
}

/// Parses the attribute arguments, recording every problem in `errors`.
pub(crate) fn parse(tokens: TokenStream, errors: &mut Errors) -> ToolArgs {
    let mut args = ToolArgs::default();
    let mut seen: HashSet<String> = HashSet::new();
    let parser = syn::meta::parser(|meta| {
        let path = &meta.path;
        let key = path
            .get_ident()
            .map_or_else(|| quote::quote!(#path).to_string(), ToString::to_string);
        let key_span = meta
            .path
            .segments
            .first()
            .map_or_else(Span::call_site, |s| s.ident.span());
        if !KEYS.contains(&key.as_str()) {
            errors.at(
                key_span,
                format!(
                    "unknown `#[tool]` argument `{key}`; expected one of: {}",
                    KEYS.join(", ")
                ),
            );
            return skip_value(&meta);
        }
        if !seen.insert(key.clone()) {
            errors.at(key_span, format!("duplicate `#[tool]` argument `{key}`"));
            return skip_value(&meta);
        }
        parse_key(&key, &meta, &mut args, errors)
    });
    if let Err(e) = parser.parse2(tokens) {
        errors.push(e);
    }
    if let Some(message) = &args.deprecation_message
        && !args.deprecated
    {
        errors.spanned(
            message,
            "`deprecation_message` needs `deprecated`: add `deprecated` to mark the tool deprecated",
        );
    }
    args
}

/// Consumes the value of a key that will not be used, so parsing can go on.
fn skip_value(meta: &ParseNestedMeta<'_>) -> syn::Result<()> {
    if meta.input.peek(Token![=]) {
        meta.value()?.parse::<syn::Expr>()?;
    } else if meta.input.peek(syn::token::Paren) {
        let _content;
        syn::parenthesized!(_content in meta.input);
    }
    Ok(())
}

fn parse_key(
    key: &str,
    meta: &ParseNestedMeta<'_>,
    args: &mut ToolArgs,
    errors: &mut Errors,
) -> syn::Result<()> {
    match key {
        "name" => {
            let lit: LitStr = meta.value()?.parse()?;
            if let Err(reason) = check_tool_name(&lit.value()) {
                errors.spanned(&lit, format!("invalid tool name: {reason}"));
            }
            args.name = Some(lit);
        }
        "description" => {
            let lit: LitStr = meta.value()?.parse()?;
            if lit.value().trim().is_empty() {
                errors.spanned(&lit, "`description` must not be empty");
            }
            args.description = Some(lit.value().trim().to_owned());
        }
        "group" => {
            let lit: LitStr = meta.value()?.parse()?;
            if lit.value().trim().is_empty() {
                errors.spanned(&lit, "`group` must not be empty");
            }
            args.group = Some(lit.value());
        }
        "version" => {
            let lit: LitStr = meta.value()?.parse()?;
            if lit.value().trim().is_empty() {
                errors.spanned(&lit, "`version` must not be empty");
            }
            args.version = Some(lit.value());
        }
        "deprecation_message" => {
            let lit: LitStr = meta.value()?.parse()?;
            if lit.value().trim().is_empty() {
                errors.spanned(&lit, "`deprecation_message` must not be empty");
            }
            args.deprecation_message = Some(lit);
        }
        "deferred" => args.deferred = parse_flag(meta)?,
        "auto_allow" => args.auto_allow = parse_flag(meta)?,
        "idempotent" => args.idempotent = parse_flag(meta)?,
        "background" => args.background = parse_flag(meta)?,
        "normalize_input" => args.normalize_input = parse_flag(meta)?,
        "input_error" => {
            let lit: LitStr = meta.value()?.parse()?;
            match lit.parse::<syn::Path>() {
                Ok(path) => args.input_error = Some(path),
                Err(_) => errors.spanned(
                    &lit,
                    "`input_error` must be the path of a function, e.g. \"crate::input::refine\"",
                ),
            }
        }
        "metadata" => {
            meta.parse_nested_meta(|entry| {
                let key = entry
                    .path
                    .get_ident()
                    .map(ToString::to_string)
                    .unwrap_or_default();
                let lit: LitStr = entry.value()?.parse()?;
                if args.metadata.iter().any(|(k, _)| *k == key) {
                    errors.spanned(&entry.path, format!("duplicate metadata key `{key}`"));
                } else if ["tags", "examples", "version", "deprecated"].contains(&key.as_str()) {
                    errors.spanned(
                        &entry.path,
                        format!("`{key}` has its own `#[tool]` argument; use that"),
                    );
                } else {
                    args.metadata.push((key, lit.value()));
                }
                Ok(())
            })?;
        }
        "context_retention" => {
            let lit: LitStr = meta.value()?.parse()?;
            match lit.value().as_str() {
                "keep" => args.context_retention = Some(Ident::new("Keep", lit.span())),
                "observation" => {
                    args.context_retention = Some(Ident::new("Observation", lit.span()));
                }
                _ => errors.spanned(
                    &lit,
                    "`context_retention` must be \"keep\" or \"observation\"",
                ),
            }
        }
        "timeout_owner" => {
            let lit: LitStr = meta.value()?.parse()?;
            match lit.value().as_str() {
                "runtime" => args.timeout_owner = Some(Ident::new("Runtime", lit.span())),
                "tool" => args.timeout_owner = Some(Ident::new("Tool", lit.span())),
                _ => errors.spanned(&lit, "`timeout_owner` must be \"runtime\" or \"tool\""),
            }
        }
        "deprecated" => args.deprecated = parse_flag(meta)?,
        "concurrency_safe" => args.concurrency_safe = Some(parse_flag(meta)?),
        "capabilities" => {
            let mut seen = HashSet::new();
            meta.parse_nested_meta(|cap| {
                let name = cap
                    .path
                    .get_ident()
                    .map(ToString::to_string)
                    .unwrap_or_default();
                match CAPABILITIES.iter().find(|(n, _)| *n == name) {
                    Some((_, variant)) if seen.insert(name.clone()) => {
                        let span = cap
                            .path
                            .segments
                            .first()
                            .map_or_else(Span::call_site, |s| s.ident.span());
                        args.capabilities.push(Ident::new(variant, span));
                    }
                    Some(_) => errors.spanned(&cap.path, format!("duplicate capability `{name}`")),
                    None => {
                        let known: Vec<&str> = CAPABILITIES.iter().map(|(n, _)| *n).collect();
                        errors.spanned(
                            &cap.path,
                            format!("unknown capability; expected one of: {}", known.join(", ")),
                        );
                    }
                }
                skip_value(&cap)
            })?;
        }
        "tags" => {
            for lit in parse_str_list(meta)? {
                if lit.value().trim().is_empty() {
                    errors.spanned(&lit, "a tag must not be empty");
                } else if args.tags.contains(&lit.value()) {
                    errors.spanned(&lit, format!("duplicate tag `{}`", lit.value()));
                } else {
                    args.tags.push(lit.value());
                }
            }
        }
        "aliases" => {
            for lit in parse_str_list(meta)? {
                match check_tool_name(&lit.value()) {
                    Err(reason) => errors.spanned(&lit, format!("invalid alias: {reason}")),
                    Ok(()) if args.aliases.contains(&lit.value()) => {
                        errors.spanned(&lit, format!("duplicate alias `{}`", lit.value()));
                    }
                    Ok(()) => args.aliases.push(lit.value()),
                }
            }
        }
        "examples" => {
            for lit in parse_str_list(meta)? {
                match serde_json::from_str::<serde_json::Value>(&lit.value()) {
                    Ok(value @ serde_json::Value::Object(_)) => args.examples.push(value),
                    Ok(_) => errors.spanned(
                        &lit,
                        "an example must be a JSON object of arguments, e.g. r#\"{\"key\": \"a\"}\"#",
                    ),
                    Err(e) => errors.spanned(&lit, format!("an example must be valid JSON: {e}")),
                }
            }
        }
        "timeout" => {
            let lit: Lit = meta.value()?.parse()?;
            match parse_timeout(&lit) {
                Ok(ms) => args.timeout_ms = Some(ms),
                Err(reason) => errors.spanned(&lit, reason),
            }
        }
        "execution_mode" => {
            let lit: LitStr = meta.value()?.parse()?;
            match lit.value().as_str() {
                "inline" => args.execution_mode = Some((ExecutionMode::Inline, lit.span())),
                "thread" => args.execution_mode = Some((ExecutionMode::Thread, lit.span())),
                _ => errors.spanned(&lit, "`execution_mode` must be \"inline\" or \"thread\""),
            }
        }
        "crate" => {
            let lit: LitStr = meta.value()?.parse()?;
            match lit.parse::<syn::Path>() {
                Ok(path) => args.krate = Some(path),
                Err(_) => errors.spanned(&lit, "`crate` must be a path, e.g. \"::iris::core\""),
            }
        }
        _ => skip_value(meta)?,
    }
    Ok(())
}

/// `key` alone means true; `key = true|false` says which.
fn parse_flag(meta: &ParseNestedMeta<'_>) -> syn::Result<bool> {
    if meta.input.peek(Token![=]) {
        Ok(meta.value()?.parse::<LitBool>()?.value)
    } else {
        Ok(true)
    }
}

/// `key("a", "b")`.
fn parse_str_list(meta: &ParseNestedMeta<'_>) -> syn::Result<Vec<LitStr>> {
    let content;
    syn::parenthesized!(content in meta.input);
    let list = Punctuated::<LitStr, Token![,]>::parse_terminated(&content)?;
    Ok(list.into_iter().collect())
}

/// A timeout literal in milliseconds: seconds as a number (`30`, `1.5`) or a string
/// with a unit (`"500ms"`, `"30s"`, `"2m"`, `"1h"`).
pub(crate) fn parse_timeout(lit: &Lit) -> Result<u64, String> {
    const HINT: &str = "`timeout` is seconds (`30`, `1.5`) or a duration string (`\"500ms\"`, `\"30s\"`, `\"2m\"`, `\"1h\"`)";
    let ms = match lit {
        Lit::Int(int) => int
            .base10_parse::<u64>()
            .ok()
            .and_then(|s| s.checked_mul(1000))
            .map(|ms| ms as f64),
        Lit::Float(float) => float.base10_parse::<f64>().ok().map(|s| s * 1000.0),
        Lit::Str(s) => parse_duration_str(&s.value()),
        _ => None,
    };
    match ms {
        Some(ms) if ms.is_finite() && ms >= 1.0 && ms <= u64::MAX as f64 => Ok(ms.round() as u64),
        Some(_) => Err(format!("{HINT}; it must be at least 1ms")),
        None => Err(HINT.to_owned()),
    }
}

fn parse_duration_str(text: &str) -> Option<f64> {
    let text = text.trim();
    let split = text.find(|c: char| !(c.is_ascii_digit() || c == '.'))?;
    let (number, unit) = text.split_at(split);
    let number: f64 = number.parse().ok()?;
    let factor = match unit.trim() {
        "ms" => 1.0,
        "s" => 1000.0,
        "m" | "min" => 60_000.0,
        "h" => 3_600_000.0,
        _ => return None,
    };
    Some(number * factor)
}

/// The tool-name rules of `ToolDefinition`: 1–64 characters,
/// `^[A-Za-z_][A-Za-z0-9_]*$`. Repeated here because the macro crate cannot depend on
/// core (core re-exports the macro).
pub(crate) fn check_tool_name(name: &str) -> Result<(), String> {
    let Some(first) = name.chars().next() else {
        return Err("a name must not be empty".into());
    };
    let len = name.chars().count();
    if len > 64 {
        return Err(format!("`{name}` is {len} characters; at most 64 allowed"));
    }
    if !(first.is_ascii_alphabetic() || first == '_') {
        return Err(format!("`{name}` must start with a letter or `_`"));
    }
    if let Some(bad) = name
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || *c == '_'))
    {
        return Err(format!(
            "`{name}` may contain only ASCII letters, digits and `_`, not `{bad}`"
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check_timeout(tokens: &str, expect: Result<u64, &str>) {
        let lit: Lit = syn::parse_str(tokens).unwrap_or_else(|e| panic!("{tokens}: {e}"));
        match (parse_timeout(&lit), expect) {
            (Ok(ms), Ok(want)) => assert_eq!(ms, want, "{tokens}"),
            (Err(e), Err(want)) => assert!(e.contains(want), "{tokens}: {e}"),
            (got, want) => panic!("{tokens}: got {got:?}, want {want:?}"),
        }
    }

    #[test]
    fn timeouts() {
        let cases: &[(&str, Result<u64, &str>)] = &[
            ("30", Ok(30_000)),
            ("1.5", Ok(1_500)),
            ("\"500ms\"", Ok(500)),
            ("\"30s\"", Ok(30_000)),
            ("\"2m\"", Ok(120_000)),
            ("\"1h\"", Ok(3_600_000)),
            ("\"0.5s\"", Ok(500)),
            ("0", Err("at least 1ms")),
            ("\"0s\"", Err("at least 1ms")),
            ("\"30\"", Err("duration string")),
            ("\"thirty\"", Err("duration string")),
            ("\"5d\"", Err("duration string")),
            ("true", Err("duration string")),
        ];
        for (tokens, expect) in cases {
            check_timeout(tokens, *expect);
        }
    }

    #[test]
    fn tool_names() {
        let cases: &[(&str, Option<&str>)] = &[
            ("read_config", None),
            ("_private", None),
            ("A1", None),
            ("", Some("must not be empty")),
            ("read-config", Some("not `-`")),
            ("1st", Some("must start with a letter")),
            (&"x".repeat(65), Some("65 characters")),
        ];
        for (name, expect) in cases {
            match (check_tool_name(name), expect) {
                (Ok(()), None) => {}
                (Err(e), Some(want)) => assert!(e.contains(want), "{name}: {e}"),
                (got, want) => panic!("{name}: got {got:?}, want {want:?}"),
            }
        }
    }
}
