//! A tool function's parameters: which become input fields, which are presets, which
//! receive the call context, and the attributes that shape each field.

use proc_macro2::TokenStream;
use quote::ToTokens;
use syn::{Attribute, Expr, FnArg, Ident, LitStr, Meta, Pat, Signature, Type};

use crate::ctxt::Errors;
use crate::docs;

/// How a parameter gets its value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Role {
    /// From the model's input: a schema property.
    Input,
    /// Bound by the host with `.preset(name, value)`; hidden from the schema.
    Preset,
    /// The call's `&ToolExecutionContext`, injected.
    Context,
}

/// A parameter's default, which makes it optional.
pub(crate) enum DefaultValue {
    /// `#[default]`: `Default::default()`.
    Trait,
    /// `#[default = expr]`.
    Expr(Expr),
}

/// One analysed parameter.
pub(crate) struct Param {
    /// The binding as written (possibly raw, like `r#type`), without `mut`.
    pub(crate) ident: Ident,
    /// The name without `r#`: the JSON key.
    pub(crate) name: String,
    pub(crate) ty: Type,
    pub(crate) role: Role,
    pub(crate) default: Option<DefaultValue>,
    /// From `///` on the parameter or `#[tool(description = "…")]`.
    pub(crate) description: Option<String>,
    /// `#[serde(…)]` and `#[schemars(…)]`, copied onto the input field.
    pub(crate) passthrough: Vec<Attribute>,
}

/// Analyses the parameters and strips the attributes the macro consumes from `sig`,
/// so the function is emitted as plain Rust.
///
/// `method`: the function is a method of a `#[tools]` impl block, which must take
/// `&self` (the tool's state); a free `#[tool]` function must take no receiver.
pub(crate) fn analyze(sig: &mut Signature, errors: &mut Errors, method: bool) -> Vec<Param> {
    let mut params = Vec::new();
    let mut has_receiver = false;
    for arg in &mut sig.inputs {
        match arg {
            FnArg::Receiver(receiver) if !method => errors.spanned(
                &*receiver,
                "a `#[tool]` function cannot take `self`: put `#[tool]` on a free function, \
                 or on a method inside a `#[tools]` impl block",
            ),
            FnArg::Receiver(receiver) => {
                has_receiver = true;
                if !shared_receiver(receiver) {
                    errors.spanned(
                        &*receiver,
                        "a tool method takes `&self` (or `self: &Arc<Self>` to keep a handle \
                         on the state): calls may run at the same time, so the state is \
                         shared, never moved or borrowed mutably",
                    );
                }
            }
            FnArg::Typed(pat_type) => {
                let attrs = std::mem::take(&mut pat_type.attrs);
                let mut found = ParamAttrs::default();
                for attr in attrs {
                    if let Some(kept) = found.take(attr, errors) {
                        pat_type.attrs.push(kept);
                    }
                }
                let Some(ident) = param_ident(&pat_type.pat, errors) else {
                    continue;
                };
                if let Some(param) = build_param(ident, &pat_type.ty, found, errors) {
                    params.push(param);
                }
            }
        }
    }
    if method && !has_receiver {
        errors.spanned(
            &sig.ident,
            "a method in a `#[tools]` impl block takes `&self`: the state every call shares",
        );
    }
    params
}

/// `&self`, or `self: &Arc<Self>` (the generated tool holds the state as an `Arc`, so
/// a body that must move a handle on its state into a task, e.g. a blocking one, can
/// clone that `Arc`).
fn shared_receiver(receiver: &syn::Receiver) -> bool {
    match &receiver.kind {
        syn::ReceiverKind::Reference(_, _, mutability) => mutability.is_none(),
        syn::ReceiverKind::Typed(_, ty) => receiver.mutability.is_none() && is_ref_arc_self(ty),
        _ => false,
    }
}

/// `&Arc<Self>`, with any path to `Arc` (`std::sync::Arc<Self>` too).
fn is_ref_arc_self(ty: &Type) -> bool {
    let Type::Reference(reference) = ty else {
        return false;
    };
    if reference.mutability.is_some() {
        return false;
    }
    let Type::Path(path) = &*reference.elem else {
        return false;
    };
    let Some(last) = path.path.segments.last() else {
        return false;
    };
    let syn::PathArguments::AngleBracketed(args) = &last.arguments else {
        return false;
    };
    let is_self = |arg: &syn::GenericArgument| {
        matches!(arg, syn::GenericArgument::Type(Type::Path(p))
            if p.qself.is_none() && p.path.is_ident("Self"))
    };
    path.qself.is_none()
        && last.ident == "Arc"
        && args.args.len() == 1
        && args.args.first().is_some_and(is_self)
}

fn param_ident(pat: &Pat, errors: &mut Errors) -> Option<Ident> {
    match pat {
        Pat::Ident(p) if p.by_ref.is_none() && p.subpat.is_none() => Some(p.ident.clone()),
        other => {
            errors.spanned(
                other,
                "`#[tool]` parameters must be plain names like `path: String`: \
                 each name is a key of the model's JSON input",
            );
            None
        }
    }
}

fn build_param(ident: Ident, ty: &Type, attrs: ParamAttrs, errors: &mut Errors) -> Option<Param> {
    let name = ident.to_string();
    let name = name.strip_prefix("r#").unwrap_or(&name).to_owned();
    let role = match context_type(ty) {
        Some(true) => Role::Context,
        Some(false) => {
            errors.spanned(
                ty,
                "take the context by shared reference: `ctx: &ToolExecutionContext`",
            );
            return None;
        }
        None if attrs.preset.is_some() => Role::Preset,
        None => Role::Input,
    };
    if role == Role::Context {
        for at in [attrs.preset.as_ref(), attrs.default_at.as_ref()]
            .into_iter()
            .flatten()
        {
            errors.spanned(
                at,
                "the context parameter is injected; it takes no `#[preset]` or `#[default]`",
            );
        }
        return Some(Param {
            ident,
            name,
            ty: ty.clone(),
            role,
            default: None,
            description: None,
            passthrough: Vec::new(),
        });
    }
    check_owned(ty, errors);
    if role == Role::Preset {
        if let Some(at) = &attrs.default_at {
            errors.spanned(
                at,
                "a `#[preset]` parameter is always bound by the host, so it takes no default",
            );
        }
        if let Some(attr) = attrs.passthrough.first() {
            errors.spanned(attr, "a `#[preset]` parameter is not in the schema; `#[serde]`/`#[schemars]` do not apply");
        }
    }
    let description = attrs.description.or_else(|| {
        docs::doc_text(&attrs.docs)
            .map(|d| d.trim().to_owned())
            .filter(|d| !d.is_empty())
    });
    Some(Param {
        ident,
        name,
        ty: ty.clone(),
        role,
        default: attrs.default,
        description,
        passthrough: attrs.passthrough,
    })
}

/// `Some(true)` for `&ToolExecutionContext`, `Some(false)` for
/// `&mut ToolExecutionContext` or an owned one, `None` for anything else.
fn context_type(ty: &Type) -> Option<bool> {
    let is_ctx = |ty: &Type| match ty {
        Type::Path(p) => p
            .qself
            .is_none()
            .then(|| p.path.segments.last())
            .flatten()
            .is_some_and(|s| s.ident == "ToolExecutionContext" && s.arguments.is_none()),
        _ => false,
    };
    match ty {
        Type::Reference(r) if is_ctx(&r.elem) => Some(r.mutability.is_none()),
        Type::Paren(p) => context_type(&p.elem),
        Type::Group(g) => context_type(&g.elem),
        other if is_ctx(other) => Some(false),
        _ => None,
    }
}

/// Reports types that cannot be deserialized into an owned input field.
fn check_owned(ty: &Type, errors: &mut Errors) {
    match ty {
        Type::Reference(r) => errors.spanned(
            r,
            "a tool parameter must be an owned type, since it is deserialized from JSON: \
             use `String` for `&str` and `Vec<T>` for `&[T]`; only `&ToolExecutionContext` is injected",
        ),
        Type::ImplTrait(t) => errors.spanned(
            t,
            "`impl Trait` cannot be a tool parameter: the input needs a concrete type to \
             deserialize and describe in the schema",
        ),
        Type::TraitObject(t) => errors.spanned(
            t,
            "a trait object cannot be a tool parameter: use a concrete type",
        ),
        Type::Ptr(p) => errors.spanned(p, "a raw pointer cannot be a tool parameter"),
        Type::Infer(t) => errors.spanned(t, "a tool parameter needs an explicit type"),
        Type::Array(a) => check_owned(&a.elem, errors),
        Type::Slice(s) => check_owned(&s.elem, errors),
        Type::Group(g) => check_owned(&g.elem, errors),
        Type::Paren(p) => check_owned(&p.elem, errors),
        Type::Tuple(t) => t.elems.iter().for_each(|e| check_owned(e, errors)),
        Type::Path(p) => {
            for segment in &p.path.segments {
                if let syn::PathArguments::AngleBracketed(args) = &segment.arguments {
                    for arg in &args.args {
                        if let syn::GenericArgument::Type(t) = arg {
                            check_owned(t, errors);
                        }
                    }
                }
            }
        }
        _ => {}
    }
}

/// The attributes found on one parameter.
#[derive(Default)]
struct ParamAttrs {
    /// Where `preset` was written, for error spans.
    preset: Option<TokenStream>,
    default: Option<DefaultValue>,
    /// Where the default was written, for error spans.
    default_at: Option<TokenStream>,
    description: Option<String>,
    docs: Vec<Attribute>,
    passthrough: Vec<Attribute>,
}

impl ParamAttrs {
    /// Consumes an attribute the macro understands; returns the others, which stay on
    /// the function's parameter.
    fn take(&mut self, attr: Attribute, errors: &mut Errors) -> Option<Attribute> {
        let path = attr.path();
        if path.is_ident("doc") {
            self.docs.push(attr);
        } else if path.is_ident("serde") || path.is_ident("schemars") {
            self.passthrough.push(attr);
        } else if path.is_ident("preset") {
            match &attr.meta {
                Meta::Path(_) => self.set_preset(attr.to_token_stream(), errors),
                _ => errors.spanned(&attr, "`#[preset]` takes no arguments"),
            }
        } else if path.is_ident("default") {
            match &attr.meta {
                Meta::Path(_) => {
                    self.set_default(DefaultValue::Trait, attr.to_token_stream(), errors);
                }
                Meta::NameValue(nv) => {
                    let at = attr.to_token_stream();
                    self.set_default(DefaultValue::Expr(nv.value.clone()), at, errors);
                }
                Meta::List(_) => errors.spanned(
                    &attr,
                    "write `#[default]` for `Default::default()` or `#[default = value]`",
                ),
            }
        } else if path.is_ident("tool") {
            self.take_tool(&attr, errors);
        } else if path.is_ident("cfg") || path.is_ident("cfg_attr") {
            errors.spanned(
                &attr,
                "`#[cfg]` on a tool parameter is not supported: the schema would change with it",
            );
        } else {
            return Some(attr);
        }
        None
    }

    /// `#[tool(preset)]`, `#[tool(default)]`, `#[tool(default = expr)]`,
    /// `#[tool(description = "…")]`.
    fn take_tool(&mut self, attr: &Attribute, errors: &mut Errors) {
        let mut local = Errors::default();
        let result = attr.parse_nested_meta(|meta| {
            let at = meta.path.to_token_stream();
            if meta.path.is_ident("preset") {
                self.set_preset(at, &mut local);
            } else if meta.path.is_ident("default") {
                if meta.input.peek(syn::Token![=]) {
                    let expr: Expr = meta.value()?.parse()?;
                    self.set_default(DefaultValue::Expr(expr), at, &mut local);
                } else {
                    self.set_default(DefaultValue::Trait, at, &mut local);
                }
            } else if meta.path.is_ident("description") {
                let lit: LitStr = meta.value()?.parse()?;
                if lit.value().trim().is_empty() {
                    local.spanned(&lit, "a parameter description must not be empty");
                } else if self.description.is_some() {
                    local.spanned(&lit, "duplicate parameter `description`");
                } else {
                    self.description = Some(lit.value().trim().to_owned());
                }
            } else {
                local.spanned(
                    at,
                    "unknown parameter argument; expected `preset`, `default`, `default = value` \
                     or `description = \"…\"`",
                );
                if meta.input.peek(syn::Token![=]) {
                    meta.value()?.parse::<Expr>()?;
                }
            }
            Ok(())
        });
        if let Err(e) = result {
            errors.push(e);
        }
        if let Err(e) = local.finish() {
            errors.push(e);
        }
    }

    fn set_preset(&mut self, at: TokenStream, errors: &mut Errors) {
        if self.preset.is_some() {
            errors.spanned(&at, "duplicate `preset`");
        }
        self.preset = Some(at);
    }

    fn set_default(&mut self, value: DefaultValue, at: TokenStream, errors: &mut Errors) {
        if self.default.is_some() {
            errors.spanned(&at, "duplicate `default`");
            return;
        }
        self.default = Some(value);
        self.default_at = Some(at);
    }
}
