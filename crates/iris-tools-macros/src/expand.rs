//! The expansion of `#[tool]`: checks the function, then emits it unchanged (minus the
//! parameter attributes the macro consumes) next to a tool type of the same name.
//!
//! For `fn read_config(…)` the output is, in outline:
//!
//! ```text
//! fn read_config(…) { … }                      // the original, still callable
//! pub struct read_config { core: TypedCore }   // the tool value (type namespace only)
//! const _: () = {
//!     struct Input { … }                       // Deserialize + JsonSchema
//!     impl read_config { fn tool(), fn definition(), fn input_schema(), fn preset(…) }
//!     impl Tool for read_config { … }          // parse → call → IntoToolOutput
//! };
//! ```
//!
//! A braced struct lives only in the type namespace, so it can share the function's
//! name; and because everything is emitted in the function's own scope, tools declared
//! inside a function body see that body's local types.

use proc_macro2::TokenStream;
use quote::{format_ident, quote, quote_spanned};
use syn::spanned::Spanned;
use syn::{Item, ItemFn, Lit, ReturnType, Signature, Type};

use crate::args::{self, ExecutionMode, ToolArgs};
use crate::ctxt::Errors;
use crate::docs;
use crate::json;
use crate::params::{self, DefaultValue, Param, Role};

/// Where generated code finds core by default.
pub(crate) const CORE_PATH: &str = "::iris_tools_core";
/// Where generated code finds core through the `iris` facade.
pub(crate) const FACADE_PATH: &str = "::iris::core";

/// Expands `#[tool(args)] item`, with generated paths rooted at `default_crate` unless
/// `crate = "…"` says otherwise. Every problem is reported, each at its own span.
pub(crate) fn tool(
    args: TokenStream,
    item: TokenStream,
    default_crate: &str,
) -> syn::Result<TokenStream> {
    let mut errors = Errors::default();
    let args = args::parse(args, &mut errors);
    let mut func = match syn::parse2::<Item>(item)? {
        Item::Fn(func) => func,
        other => {
            let error = syn::Error::new_spanned(&other, "`#[tool]` goes on a function");
            return Err(error);
        }
    };
    let params = params::analyze(&mut func.sig, &mut errors, false);
    let result = check_and_emit(&func, &args, &params, default_crate, errors);
    // On errors the function is still emitted (without the consumed attributes), so
    // its callers and imports do not add unrelated errors to the real ones.
    result.or_else(|errors| {
        let errors = errors.into_compile_error();
        Ok(quote!(#func #errors))
    })
}

/// Checks everything but the parameters (already analysed) and emits the expansion.
fn check_and_emit(
    func: &ItemFn,
    args: &ToolArgs,
    params: &[Param],
    default_crate: &str,
    errors: Errors,
) -> syn::Result<TokenStream> {
    let prepared = prepare(func, args, params, default_crate, errors)?;
    Ok(prepared.generated(func, args, params, Target::Free).emit())
}

/// What a tool's expansion needs beyond the function: its name, description, the
/// documented parameters and the path to core.
pub(crate) struct Prepared {
    tool_name: String,
    description: String,
    doc_params: Vec<(String, String)>,
    krate: syn::Path,
}

impl Prepared {
    pub(crate) fn generated<'a>(
        &'a self,
        func: &'a ItemFn,
        args: &'a ToolArgs,
        params: &'a [Param],
        target: Target<'a>,
    ) -> Generated<'a> {
        Generated {
            func,
            args,
            params,
            doc_params: &self.doc_params,
            tool_name: &self.tool_name,
            description: &self.description,
            krate: &self.krate,
            target,
        }
    }
}

/// Checks the signature, the name and the documented parameters of a tool function (or
/// method); collects every problem.
pub(crate) fn prepare(
    func: &ItemFn,
    args: &ToolArgs,
    params: &[Param],
    default_crate: &str,
    mut errors: Errors,
) -> syn::Result<Prepared> {
    check_signature(&func.sig, args, &mut errors);

    let fn_name = unraw(&func.sig.ident);
    let tool_name = args
        .name
        .as_ref()
        .map_or_else(|| fn_name.clone(), syn::LitStr::value);
    if args.name.is_none()
        && let Err(reason) = args::check_tool_name(&tool_name)
    {
        errors.spanned(
            &func.sig.ident,
            format!("invalid tool name: {reason}; set a valid one with `#[tool(name = \"…\")]`"),
        );
    }

    let doc = docs::parse(&docs::doc_text(&func.attrs).unwrap_or_default());
    for (documented, _) in &doc.params {
        if !params.iter().any(|p| &p.name == documented) {
            let span = func
                .attrs
                .iter()
                .find(|a| a.path().is_ident("doc"))
                .map_or_else(|| func.sig.ident.span(), Spanned::span);
            errors.at(
                span,
                format!("the doc comment describes `{documented}`, which is not a parameter of `{fn_name}`"),
            );
        }
    }
    errors.finish()?;

    let krate = match &args.krate {
        Some(path) => path.clone(),
        None => syn::parse_str(default_crate)?,
    };
    let description = args
        .description
        .clone()
        .or_else(|| Some(doc.description.clone()).filter(|d| !d.is_empty()))
        .unwrap_or_else(|| tool_name.clone());
    Ok(Prepared {
        tool_name,
        description,
        doc_params: doc.params,
        krate,
    })
}

pub(crate) fn unraw(ident: &syn::Ident) -> String {
    let name = ident.to_string();
    name.strip_prefix("r#").unwrap_or(&name).to_owned()
}

pub(crate) fn check_signature(sig: &Signature, args: &ToolArgs, errors: &mut Errors) {
    if !sig.generics.params.is_empty() || sig.generics.where_clause.is_some() {
        errors.spanned(
            &sig.generics,
            "a `#[tool]` function cannot be generic: its input type and schema must be concrete",
        );
    }
    if let syn::Safety::Unsafe(token) = &sig.safety {
        errors.spanned(
            token,
            "a `#[tool]` function cannot be `unsafe`: the model calls it",
        );
    }
    if let Some(variadic) = &sig.variadic {
        errors.spanned(variadic, "a `#[tool]` function cannot be variadic");
    }
    if let (Some((ExecutionMode::Thread, span)), Some(_)) = (&args.execution_mode, &sig.asyncness) {
        errors.at(
            *span,
            "`execution_mode = \"thread\"` is for sync functions: an async function runs \
             inline on the executor's task (remove `async` or the execution mode)",
        );
    }
}

/// Whose tool it is: a free function, or a method of a `#[tools]` impl block whose
/// `&self` the generated tool holds as `Arc<Self>`.
#[derive(Clone, Copy)]
pub(crate) enum Target<'a> {
    /// `#[tool] fn …`: the tool type shares the function's name.
    Free,
    /// `#[tool]` on a method of `impl SelfTy`: the tool type is `tool_type`.
    Method {
        self_ty: &'a Type,
        tool_type: &'a syn::Ident,
        /// `#[tools(vis = "…")]`: the visibility of the generated items, instead of
        /// the method's.
        vis: Option<&'a syn::Visibility>,
        /// `#[tools(map_definition = "…")]`: a `fn(&SelfTy, &mut ToolDefinition)`
        /// each `<method>_tool()` applies to the definition it builds.
        map_definition: Option<&'a syn::Path>,
    },
}

/// Everything the emitted code depends on.
pub(crate) struct Generated<'a> {
    func: &'a ItemFn,
    args: &'a ToolArgs,
    params: &'a [Param],
    doc_params: &'a [(String, String)],
    tool_name: &'a str,
    description: &'a str,
    krate: &'a syn::Path,
    target: Target<'a>,
}

impl Generated<'_> {
    /// The whole expansion for this tool.
    pub(crate) fn emit(&self) -> TokenStream {
        let func = self.func;
        // A `#[tools(vis = "…")]` block gives its generated items that visibility.
        let vis = match self.target {
            Target::Method { vis: Some(vis), .. } => vis,
            _ => &func.vis,
        };
        let ident = &func.sig.ident;
        let krate = self.krate;
        let p = quote!(#krate::__private);
        let fn_name = unraw(ident);
        let input_types = self.input_types(&p);
        let builder = self.builder(&p);

        // A `#[cfg]` on the function must remove the tool with it.
        let cfgs: Vec<&syn::Attribute> = func
            .attrs
            .iter()
            .filter(|a| a.path().is_ident("cfg"))
            .collect();

        let (tool_type, definition, constructors) = match self.target {
            Target::Free => {
                let struct_doc = format!(
                    " The `{}` tool, generated by `#[tool]` from the function `{fn_name}`.\n\n \
                     Build it with `{fn_name}::tool()`; `{fn_name}::definition()` and \
                     `{fn_name}::input_schema()` describe it without running anything.",
                    self.tool_name
                );
                let definition = quote! {
                    #func

                    #(#cfgs)*
                    #[doc = #struct_doc]
                    // The tool type shares the function's (snake_case) name, and an unused
                    // tool is not an error in the user's crate.
                    #[allow(non_camel_case_types, dead_code)]
                    #[derive(::core::clone::Clone, ::core::fmt::Debug)]
                    #vis struct #ident {
                        __core: #p::TypedCore,
                    }
                };
                let constructors = quote! {
                    #[allow(dead_code)]
                    impl #ident {
                        /// Builds the tool value to register. `#[preset]` parameters, if
                        /// any, still need a value from `.preset(name, value)`.
                        #vis fn tool() -> Self {
                            Self {
                                __core: Self::__iris_builder().into_core::<__IrisInput>(),
                            }
                        }

                        /// The tool's definition (name, description, input schema,
                        /// capabilities, metadata), built without running anything.
                        #vis fn definition() -> #p::ToolDefinition {
                            Self::__iris_builder()
                                .into_core::<__IrisInput>()
                                .definition()
                                .clone()
                        }

                        /// The JSON Schema of the input as the model sees it (without the
                        /// `#[preset]` parameters).
                        #vis fn input_schema() -> #p::serde_json::Value {
                            Self::definition().input_schema
                        }
                    }
                };
                (quote!(#ident), definition, constructors)
            }
            Target::Method {
                self_ty,
                tool_type,
                map_definition,
                ..
            } => {
                let struct_doc = format!(
                    " The `{}` tool: the method `{fn_name}` of a `#[tools]` impl block, over \
                     shared state.\n\n Build it with `state.{fn_name}_tool()` on an \
                     `Arc` of the state; `{fn_name}_definition()` describes it without \
                     running anything.",
                    self.tool_name
                );
                let tool_fn = format_ident!("{}_tool", fn_name);
                let definition_fn = format_ident!("{}_definition", fn_name);
                let tool_name = self.tool_name;
                let definition = quote! {
                    #(#cfgs)*
                    #[doc = #struct_doc]
                    #[derive(::core::clone::Clone)]
                    #vis struct #tool_type {
                        __core: #p::TypedCore,
                        // The definition the tool reports: the core's, adjusted by the
                        // block's `map_definition` for this state.
                        __definition: #p::ToolDefinition,
                        __state: ::std::sync::Arc<#self_ty>,
                    }

                    #(#cfgs)*
                    impl ::core::fmt::Debug for #tool_type {
                        fn fmt(&self, f: &mut ::core::fmt::Formatter<'_>) -> ::core::fmt::Result {
                            f.debug_struct(#tool_name)
                                .field("core", &self.__core)
                                .finish_non_exhaustive()
                        }
                    }
                };
                let map = map_definition.map(|path| quote!(#path(self, &mut __definition);));
                let constructors = quote! {
                    #[allow(dead_code)]
                    impl #self_ty {
                        #[doc = concat!(" The `", #tool_name, "` tool over this state.")]
                        #vis fn #tool_fn(self: &::std::sync::Arc<Self>) -> #tool_type {
                            let __core = #tool_type::__iris_builder().into_core::<__IrisInput>();
                            #[allow(unused_mut)]
                            let mut __definition = ::core::clone::Clone::clone(__core.definition());
                            #map
                            #tool_type {
                                __core,
                                __definition,
                                __state: ::std::sync::Arc::clone(self),
                            }
                        }

                        #[doc = concat!(" The definition of the `", #tool_name, "` tool, built without any state (so without the block's `map_definition`).")]
                        #vis fn #definition_fn() -> #p::ToolDefinition {
                            #tool_type::__iris_builder()
                                .into_core::<__IrisInput>()
                                .definition()
                                .clone()
                        }
                    }

                    #[allow(dead_code)]
                    impl #tool_type {
                        /// The state this tool runs over.
                        #vis fn state(&self) -> &::std::sync::Arc<#self_ty> {
                            &self.__state
                        }
                    }
                };
                (quote!(#tool_type), definition, constructors)
            }
        };
        let tool_impl = self.tool_impl(&p, &tool_type);

        quote! {
            #definition

            #(#cfgs)*
            const _: () = {
                #[allow(unused_imports)]
                use #p::{ViaIntoToolOutput as _, ViaSerialize as _};

                #input_types

                #constructors

                #[allow(dead_code)]
                impl #tool_type {
                    fn __iris_builder() -> #p::TypedToolBuilder {
                        #builder
                    }

                    /// Binds a host value to the `#[preset]` parameter `name`.
                    ///
                    /// # Errors
                    /// `INVALID_DEFINITION` when no preset has that name or the value
                    /// does not fit the parameter's type.
                    #vis fn preset(
                        mut self,
                        name: &str,
                        value: impl #p::serde::Serialize,
                    ) -> ::core::result::Result<Self, #p::Error> {
                        self.__core.bind_preset(name, value)?;
                        ::core::result::Result::Ok(self)
                    }

                    /// Names of `#[preset]` parameters that have no value yet; a call
                    /// fails while any remains.
                    #vis fn unbound_presets(&self) -> ::std::vec::Vec<&str> {
                        self.__core.unbound_presets()
                    }
                }

                #tool_impl
            };
        }
    }

    /// The input type (the model's parameters), the presets type and the functions
    /// that produce `#[default = expr]` values.
    fn input_types(&self, p: &TokenStream) -> TokenStream {
        let krate = self.krate;
        let (fields, default_fns) = self.input_fields();
        let preset_fields = self
            .params
            .iter()
            .filter(|p| p.role == Role::Preset)
            .map(|p| {
                let (ident, ty) = (&p.ident, &p.ty);
                quote!(#ident: #ty)
            });
        let serde_path = format!("{}::__private::serde", path_string(krate));
        let schemars_path = format!("{}::__private::schemars", path_string(krate));
        // `normalize_input` serializes the parsed input back into the call's JSON.
        let serialize = self
            .args
            .normalize_input
            .then(|| quote!(#p::serde::Serialize,));
        quote! {
            #[derive(#serialize #p::serde::Deserialize, #p::schemars::JsonSchema)]
            #[serde(crate = #serde_path, deny_unknown_fields)]
            #[schemars(crate = #schemars_path)]
            struct __IrisInput {
                #(#fields,)*
            }

            // Presets are parsed apart from the model's input, so an error about
            // the input never lists them as fields the model could set.
            #[derive(#p::serde::Deserialize)]
            #[serde(crate = #serde_path)]
            struct __IrisPresets {
                #(#preset_fields,)*
            }

            #(#default_fns)*
        }
    }

    /// `impl Tool`: parse once in `validate_input`, call the body in `run`.
    fn tool_impl(&self, p: &TokenStream, tool_type: &TokenStream) -> TokenStream {
        let body = self.run_body(p);
        // A method's tool reports its own copy of the definition (see
        // `map_definition`); a free function's is the core's.
        let definition = match self.target {
            Target::Free => quote!(self.__core.definition()),
            Target::Method { .. } => quote!(&self.__definition),
        };
        // `input_error = path` refines the error of a failed typed parse.
        let refine = match &self.args.input_error {
            Some(path) => quote! {
                let __parsed = __parsed.map_err(|__error| {
                    #path(#p::Tool::definition(self), __raw, __error)
                });
            },
            None => quote!(),
        };
        // `normalize_input` hands on the parsed input serialized again; the raw JSON
        // stays if that ever fails (it cannot for plain data types).
        let validated_value = if self.args.normalize_input {
            quote! {
                #p::serde_json::to_value(&__parsed.0).unwrap_or(raw)
            }
        } else {
            quote!(raw)
        };
        quote! {
            // Calling a `#[deprecated]` function is the tool's job, not a use
            // the user should be warned about.
            #[allow(deprecated)]
            impl #p::Tool for #tool_type {
                fn definition(&self) -> &#p::ToolDefinition {
                    #definition
                }

                fn validate_input(
                    &self,
                    raw: #p::serde_json::Value,
                ) -> ::core::result::Result<#p::ToolInput, #p::ToolErrorInfo> {
                    let __raw = &raw;
                    let __parsed = self.__core.parse_apart::<__IrisInput, __IrisPresets>(__raw);
                    #refine
                    let __parsed = __parsed?;
                    ::core::result::Result::Ok(#p::ToolInput::with_parsed(#validated_value, __parsed))
                }

                fn run<'a>(
                    &'a self,
                    mut input: #p::ToolInput,
                    __ctx: &'a #p::ToolExecutionContext,
                ) -> #p::BoxFuture<'a, #p::ToolOutput> {
                    ::std::boxed::Box::pin(async move {
                        // Parsed once by `validate_input`; parsed here only when `run`
                        // is called without it.
                        let __parsed = match input.take_parsed::<(__IrisInput, __IrisPresets)>() {
                            ::core::option::Option::Some(parsed) => ::core::result::Result::Ok(parsed),
                            ::core::option::Option::None => {
                                let __raw = input.value();
                                let __parsed = self
                                    .__core
                                    .parse_apart::<__IrisInput, __IrisPresets>(__raw);
                                #refine
                                __parsed
                            }
                        };
                        let (__input, __presets) = match __parsed {
                            ::core::result::Result::Ok(parsed) => parsed,
                            ::core::result::Result::Err(error) => {
                                return #p::ToolOutput::error(error);
                            }
                        };
                        #body
                    })
                }

                fn is_concurrency_safe(&self) -> bool {
                    self.__core.concurrency_safe()
                }

                fn timeout_owner(&self) -> #p::ToolTimeoutOwner {
                    self.__core.timeout_owner()
                }
            }
        }
    }

    /// The input struct's fields (the model's parameters) and the functions that
    /// produce `#[default = expr]` values.
    fn input_fields(&self) -> (Vec<TokenStream>, Vec<TokenStream>) {
        let mut fields = Vec::new();
        let mut default_fns = Vec::new();
        for param in self.params.iter().filter(|p| p.role == Role::Input) {
            let ident = &param.ident;
            let ty = &param.ty;
            let passthrough = &param.passthrough;
            let description = param
                .description
                .as_deref()
                .or_else(|| {
                    self.doc_params
                        .iter()
                        .find(|(name, _)| name == &param.name)
                        .map(|(_, d)| d.as_str())
                })
                .map(|d| quote!(#[schemars(description = #d)]));
            let default = match &param.default {
                None => None,
                Some(DefaultValue::Trait) => Some(quote!(#[serde(default)])),
                Some(DefaultValue::Expr(expr)) => {
                    let fn_ident = format_ident!("__iris_default_{}", param.name);
                    // A string literal converts with `From<&str>`, so `#[default =
                    // "text"]` works for `String`, `PathBuf` and friends.
                    let value = match expr {
                        syn::Expr::Lit(syn::ExprLit {
                            lit: Lit::Str(_), ..
                        }) => quote_spanned!(expr.span()=> ::core::convert::From::from(#expr)),
                        _ => quote!(#expr),
                    };
                    default_fns.push(quote! {
                        fn #fn_ident() -> #ty {
                            #value
                        }
                    });
                    let path = fn_ident.to_string();
                    Some(quote!(#[serde(default = #path)]))
                }
            };
            fields.push(quote! {
                #(#passthrough)*
                #description
                #default
                #ident: #ty
            });
        }
        (fields, default_fns)
    }

    /// The `TypedToolBuilder` chain for this tool's settings.
    fn builder(&self, p: &TokenStream) -> TokenStream {
        let args = self.args;
        let name = self.tool_name;
        let description = self.description;
        let mut calls = vec![quote!(.description(#description))];
        if !args.capabilities.is_empty() {
            let caps = &args.capabilities;
            calls.push(quote!(.capabilities([#(#p::ToolCapability::#caps),*])));
        }
        if let Some(group) = &args.group {
            calls.push(quote!(.group(#group)));
        }
        if !args.aliases.is_empty() {
            let aliases = &args.aliases;
            calls.push(quote!(.aliases([#(#aliases),*])));
        }
        if args.deferred {
            calls.push(quote!(.deferred(true)));
        }
        if !args.tags.is_empty() {
            let tags = &args.tags;
            calls.push(quote!(.tags([#(#tags),*])));
        }
        if !args.examples.is_empty() {
            let json_path = quote!(#p::serde_json);
            let examples = args
                .examples
                .iter()
                .map(|e| json::value_tokens(e, &json_path));
            calls.push(quote!(.examples([#(#examples),*])));
        }
        if let Some(version) = &args.version {
            calls.push(quote!(.version(#version)));
        }
        if args.deprecated {
            calls.push(quote!(.deprecated(true)));
        }
        if let Some(message) = &args.deprecation_message {
            calls.push(quote!(.deprecation_message(#message)));
        }
        if let Some(safe) = args.concurrency_safe {
            calls.push(quote!(.concurrency_safe(#safe)));
        }
        if let Some(ms) = args.timeout_ms {
            calls.push(quote!(.timeout(::core::time::Duration::from_millis(#ms))));
        }
        if args.auto_allow {
            calls.push(quote!(.auto_allow(true)));
        }
        if args.idempotent {
            calls.push(quote!(.idempotent(true)));
        }
        if args.background {
            calls.push(quote!(.background(true)));
        }
        for (key, value) in &args.metadata {
            calls.push(quote!(.metadata(#key, #value)));
        }
        if let Some(retention) = &args.context_retention {
            calls.push(quote!(.context_retention(#p::ContextRetention::#retention)));
        }
        if let Some(owner) = &args.timeout_owner {
            calls.push(quote!(.timeout_owner(#p::ToolTimeoutOwner::#owner)));
        }
        for param in self.params.iter().filter(|p| p.role == Role::Preset) {
            let ty = &param.ty;
            let preset = &param.name;
            calls.push(quote!(.declare_preset::<#ty>(#preset)));
        }
        quote!(#p::TypedTool::builder(#name) #(#calls)*)
    }

    /// The body of `run` after parsing: call the function, convert the output.
    fn run_body(&self, p: &TokenStream) -> TokenStream {
        let sig = &self.func.sig;
        let ident = &sig.ident;
        let thread = matches!(self.args.execution_mode, Some((ExecutionMode::Thread, _)));
        let args = self.params.iter().map(|param| match param.role {
            Role::Context if thread => quote!(&__ctx_owned),
            Role::Context => quote!(__ctx),
            Role::Input => {
                let field = &param.ident;
                quote!(__input.#field)
            }
            Role::Preset => {
                let field = &param.ident;
                quote!(__presets.#field)
            }
        });
        let (call, clone_state) = match self.target {
            Target::Free => (quote!(#ident(#(#args),*)), None),
            Target::Method { .. } if thread => (
                quote!(__state.#ident(#(#args),*)),
                Some(quote!(let __state = ::std::sync::Arc::clone(&self.__state);)),
            ),
            Target::Method { .. } => (quote!(self.__state.#ident(#(#args),*)), None),
        };
        let invoke = if sig.asyncness.is_some() {
            quote!(#call.await)
        } else if thread {
            let clone_ctx = self
                .params
                .iter()
                .any(|p| p.role == Role::Context)
                .then(|| quote!(let __ctx_owned = ::core::clone::Clone::clone(__ctx);));
            quote!({
                #clone_ctx
                #clone_state
                match #p::run_blocking(move || #call).await {
                    ::core::result::Result::Ok(output) => output,
                    ::core::result::Result::Err(result) => return result,
                }
            })
        } else {
            call
        };

        // The conversion carries the return type's span, so a type that is neither a
        // tool result nor `Serialize` is reported at the signature.
        let convert = match &sig.output {
            ReturnType::Type(_, ty) if is_result(ty) => quote_spanned! {ty.span()=>
                match __output {
                    ::core::result::Result::Ok(__value) => {
                        (&&#p::Kind::of(&__value)).iris_result_kind().convert(__value)
                    }
                    ::core::result::Result::Err(__error) => #p::error_result(__error),
                }
            },
            ReturnType::Type(_, ty) => quote_spanned! {ty.span()=>
                (&&#p::Kind::of(&__output)).iris_result_kind().convert(__output)
            },
            ReturnType::Default => quote! {
                (&&#p::Kind::of(&__output)).iris_result_kind().convert(__output)
            },
        };
        quote! {
            let __output = #invoke;
            #convert
        }
    }
}

/// `Result<T, E>` (any path ending in `Result` with generic arguments, so
/// `io::Result<T>` and `anyhow::Result<T>` count).
fn is_result(ty: &Type) -> bool {
    match ty {
        Type::Path(p) => p.path.segments.last().is_some_and(|s| {
            s.ident == "Result" && matches!(s.arguments, syn::PathArguments::AngleBracketed(_))
        }),
        Type::Group(g) => is_result(&g.elem),
        Type::Paren(p) => is_result(&p.elem),
        _ => false,
    }
}

/// `::a::b` as text, for `#[serde(crate = "…")]`.
fn path_string(path: &syn::Path) -> String {
    let segments: Vec<String> = path.segments.iter().map(|s| s.ident.to_string()).collect();
    let prefix = if path.leading_colon.is_some() {
        "::"
    } else {
        ""
    };
    format!("{prefix}{}", segments.join("::"))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The expansion as text, or the messages of its errors, one per line (from the
    /// `compile_error!` items emitted next to the function, or the `Err`).
    fn expand(args: TokenStream, item: TokenStream) -> Result<String, String> {
        let join = |e: syn::Error| e.into_iter().map(|e| e.to_string()).collect::<Vec<_>>();
        let tokens = tool(args, item, CORE_PATH).map_err(|e| join(e).join("\n"))?;
        let file = syn::parse2::<syn::File>(tokens.clone())
            .unwrap_or_else(|e| panic!("expansion does not parse: {e}: {tokens}"));
        let is_compile_error = |m: &syn::ItemMacro| {
            m.mac
                .path
                .segments
                .last()
                .is_some_and(|s| s.ident == "compile_error")
        };
        let messages: Vec<String> = file
            .items
            .iter()
            .filter_map(|item| match item {
                Item::Macro(m) if is_compile_error(m) => Some(
                    m.mac
                        .parse_body::<syn::LitStr>()
                        .map_or_else(|e| e.to_string(), |l| l.value()),
                ),
                _ => None,
            })
            .collect();
        if messages.is_empty() {
            Ok(tokens.to_string())
        } else {
            Err(messages.join("\n"))
        }
    }

    /// Expands and checks that the errors contain every expected fragment (or, with no
    /// fragments, that expansion succeeds and parses as Rust items).
    fn check(args: TokenStream, item: TokenStream, expect: &[&str]) {
        match (expand(args, item.clone()), expect.is_empty()) {
            (Ok(out), true) => {
                let parsed = syn::parse_str::<syn::File>(&out);
                assert!(parsed.is_ok(), "output of {item} does not parse: {out}");
            }
            (Ok(out), false) => panic!("expected errors {expect:?} for {item}, got {out}"),
            (Err(errors), true) => panic!("unexpected errors for {item}: {errors}"),
            (Err(errors), false) => {
                for fragment in expect {
                    assert!(errors.contains(fragment), "`{fragment}` not in:\n{errors}");
                }
                assert_eq!(
                    errors.lines().count(),
                    expect.len(),
                    "error count for {item}:\n{errors}"
                );
            }
        }
    }

    #[test]
    fn signatures() {
        let cases: Vec<(TokenStream, TokenStream, Vec<&str>)> = vec![
            (
                quote!(),
                quote!(
                    async fn ok(key: String) -> String {
                        key
                    }
                ),
                vec![],
            ),
            (
                quote!(),
                quote!(
                    fn sync_ok() {}
                ),
                vec![],
            ),
            (
                quote!(execution_mode = "thread"),
                quote!(
                    fn blocking(ctx: &ToolExecutionContext, n: u32) -> u32 {
                        n
                    }
                ),
                vec![],
            ),
            (
                quote!(),
                quote!(
                    async fn method(&self, key: String) {}
                ),
                vec!["cannot take `self`"],
            ),
            (
                quote!(),
                quote!(
                    async fn pat((a, b): (u8, u8)) {}
                ),
                vec!["must be plain names"],
            ),
            (
                quote!(),
                quote!(
                    async fn borrowed(key: &str, list: Vec<&str>) {}
                ),
                vec!["must be an owned type", "must be an owned type"],
            ),
            (
                quote!(),
                quote!(
                    async fn opaque(key: impl Into<String>) {}
                ),
                vec!["`impl Trait` cannot be a tool parameter"],
            ),
            (
                quote!(),
                quote!(
                    async fn generic<T>(key: T) {}
                ),
                vec!["cannot be generic"],
            ),
            (
                quote!(execution_mode = "thread"),
                quote!(
                    async fn threaded() {}
                ),
                vec!["is for sync functions"],
            ),
            (
                quote!(),
                quote!(
                    async fn ctx_mut(ctx: &mut ToolExecutionContext) {}
                ),
                vec!["by shared reference"],
            ),
            (
                quote!(),
                quote!(
                    unsafe fn danger() {}
                ),
                vec!["cannot be `unsafe`"],
            ),
        ];
        for (args, item, expect) in cases {
            check(args, item, &expect);
        }
    }

    #[test]
    fn attribute_arguments() {
        let item = quote!(
            async fn read_config(key: String) -> String {
                key
            }
        );
        let cases: Vec<(TokenStream, Vec<&str>)> = vec![
            (
                quote!(
                    name = "cfg",
                    description = "Read.",
                    capabilities(read, network),
                    group = "config",
                    deferred,
                    examples(r#"{"key": "a"}"#),
                    tags("a", "b"),
                    version = "1.0",
                    deprecated,
                    deprecation_message = "use cfg2",
                    concurrency_safe = false,
                    timeout = "30s",
                    aliases("c"),
                    execution_mode = "inline",
                    crate = "::iris::core"
                ),
                vec![],
            ),
            (
                quote!(nmae = "x"),
                vec!["unknown `#[tool]` argument `nmae`"],
            ),
            (
                quote!(name = "a", name = "b"),
                vec!["duplicate `#[tool]` argument `name`"],
            ),
            (quote!(name = "read-config"), vec!["invalid tool name"]),
            (quote!(aliases("ok", "1bad")), vec!["invalid alias"]),
            (
                quote!(capabilities(read, fly, read)),
                vec!["unknown capability", "duplicate capability `read`"],
            ),
            (
                quote!(examples("[1]", "{")),
                vec!["must be a JSON object", "must be valid JSON"],
            ),
            (quote!(timeout = "soon"), vec!["duration string"]),
            (
                quote!(execution_mode = "fiber"),
                vec!["\"inline\" or \"thread\""],
            ),
            (
                quote!(deprecation_message = "x"),
                vec!["needs `deprecated`"],
            ),
            (quote!(description = ""), vec!["must not be empty"]),
            (
                quote!(nmae = "x", group = "", timeout = 0),
                vec![
                    "unknown `#[tool]` argument",
                    "`group` must not be empty",
                    "at least 1ms",
                ],
            ),
        ];
        for (args, expect) in cases {
            check(args, item.clone(), &expect);
        }
    }

    #[test]
    fn parameter_attributes() {
        let cases: Vec<(TokenStream, Vec<&str>)> = vec![
            (
                quote!(
                    async fn f(
                        #[preset] root: std::path::PathBuf,
                        /// The key.
                        key: String,
                        #[default = 10] limit: u32,
                        #[tool(default = "x", description = "Mode.")] mode: String,
                        #[serde(rename = "type")] kind: Option<String>,
                        ctx: &ToolExecutionContext,
                    ) {
                    }
                ),
                vec![],
            ),
            (
                quote!(
                    async fn f(#[preset(x)] a: String) {}
                ),
                vec!["takes no arguments"],
            ),
            (
                quote!(
                    async fn f(
                        #[preset]
                        #[default]
                        a: String,
                    ) {
                    }
                ),
                vec!["takes no default"],
            ),
            (
                quote!(
                    async fn f(
                        #[default]
                        #[default = 1]
                        a: u8,
                    ) {
                    }
                ),
                vec!["duplicate `default`"],
            ),
            (
                quote!(
                    async fn f(#[tool(hidden)] a: u8) {}
                ),
                vec!["unknown parameter argument"],
            ),
            (
                quote!(
                    async fn f(#[cfg(test)] a: u8) {}
                ),
                vec!["`#[cfg]` on a tool parameter"],
            ),
            (
                quote!(
                    async fn f(#[preset] ctx: &ToolExecutionContext) {}
                ),
                vec!["is injected"],
            ),
            (
                quote!(
                    async fn f(
                        #[preset]
                        #[serde(rename = "b")]
                        a: u8,
                    ) {
                    }
                ),
                vec!["`#[serde]`/`#[schemars]` do not apply"],
            ),
        ];
        for (item, expect) in cases {
            check(quote!(), item, &expect);
        }
    }

    #[test]
    fn doc_comments_must_name_real_parameters() {
        let item = quote! {
            /// Read a key.
            ///
            /// # Arguments
            /// * `keyy` - the key
            async fn read_config(key: String) {}
        };
        check(
            quote!(),
            item,
            &["describes `keyy`, which is not a parameter"],
        );
    }

    #[test]
    fn errors_keep_the_function_without_consumed_attributes() {
        let out = tool(
            quote!(nmae = "x"),
            quote!(
                fn keep_me(#[preset(x)] a: String) {}
            ),
            CORE_PATH,
        );
        let out = out.map(|t| t.to_string()).unwrap_or_else(|e| panic!("{e}"));
        assert!(out.starts_with("fn keep_me (a : String) { }"), "{out}");
        assert_eq!(out.matches("compile_error").count(), 2, "{out}");
    }

    #[test]
    fn non_functions_are_rejected() {
        check(
            quote!(),
            quote!(
                struct NotAFunction;
            ),
            &["goes on a function"],
        );
    }

    #[test]
    fn expansion_keeps_the_function_and_adds_the_tool_type() {
        let out = expand(
            quote!(group = "config"),
            quote! {
                /// Read a key.
                ///
                /// # Arguments
                /// * `key` - dotted path
                pub async fn read_config(#[preset] root: String, key: String) -> Result<String, E> { todo!() }
            },
        );
        let out = out.unwrap_or_else(|e| panic!("{e}"));
        let file = syn::parse_str::<syn::File>(&out).unwrap_or_else(|e| panic!("{e}: {out}"));
        let fns: Vec<String> = file
            .items
            .iter()
            .filter_map(|i| match i {
                Item::Fn(f) => Some(f.sig.to_token_stream_string()),
                _ => None,
            })
            .collect();
        // The parameter attributes are gone; the signature is otherwise unchanged.
        assert_eq!(
            fns,
            ["async fn read_config (root : String , key : String) -> Result < String , E >"]
        );
        for fragment in [
            "pub async fn read_config",
            "pub struct read_config",
            ". group (\"config\")",
            ". declare_preset :: < String > (\"root\")",
            "# [schemars (description = \"dotted path\")] key : String",
            "description (\"Read a key.\")",
            ":: iris_tools_core :: __private :: error_result",
            "crate = \"::iris_tools_core::__private::serde\"",
        ] {
            assert!(out.contains(fragment), "`{fragment}` not in {out}");
        }
    }

    trait SigString {
        fn to_token_stream_string(&self) -> String;
    }

    impl SigString for Signature {
        fn to_token_stream_string(&self) -> String {
            quote::ToTokens::to_token_stream(self).to_string()
        }
    }
}
