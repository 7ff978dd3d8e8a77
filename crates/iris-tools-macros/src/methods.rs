//! The expansion of `#[tools]` on an impl block: every method marked `#[tool(...)]`
//! becomes a tool over shared state (rmcp's `#[tool_router]` idea).
//!
//! For `impl FileTools { #[tool] async fn read_file(&self, …) … }` the output is, in
//! outline:
//!
//! ```text
//! impl FileTools { async fn read_file(&self, …) … }   // the methods, still callable
//! pub struct FileToolsReadFileTool { core: TypedCore, state: Arc<FileTools> }
//! const _: () = {
//!     struct Input { … }                               // Deserialize + JsonSchema
//!     impl FileTools { fn read_file_tool(self: &Arc<Self>), fn read_file_definition() }
//!     impl Tool for FileToolsReadFileTool { … }        // parse once → self.state.read_file(…)
//! };
//! impl FileTools { fn tools(self: &Arc<Self>) -> Vec<Arc<dyn Tool>> }
//! ```
//!
//! The state enters typed, as `&self`: no JSON presets for values that are not JSON. A
//! method may take `self: &Arc<Self>` instead, when its body needs an owned handle on
//! the state (to move into a blocking task, say): the tool holds the state as an `Arc`.

use proc_macro2::TokenStream;
use quote::{format_ident, quote};
use syn::{ImplItem, Item, ItemFn, ItemImpl, Type};

use crate::args;
use crate::ctxt::Errors;
use crate::expand::{self, Target, unraw};
use crate::params;

/// Expands `#[tools(args)] impl … { … }`.
pub(crate) fn tools(
    args: TokenStream,
    item: TokenStream,
    default_crate: &str,
) -> syn::Result<TokenStream> {
    let mut block = match syn::parse2::<Item>(item)? {
        Item::Impl(block) => block,
        other => {
            return Err(syn::Error::new_spanned(
                &other,
                "`#[tools]` goes on an inherent impl block whose methods are marked `#[tool]`",
            ));
        }
    };
    let BlockArgs {
        krate,
        vis: vis_override,
        map_definition,
    } = parse_args(args)?;
    check_block(&block)?;
    let self_ident = self_ident(&block.self_ty)?;
    let self_ty = (*block.self_ty).clone();

    let mut errors = Errors::default();
    let mut tools = Vec::new();
    for item in &mut block.items {
        let ImplItem::Fn(method) = item else { continue };
        let Some(index) = method.attrs.iter().position(|a| a.path().is_ident("tool")) else {
            continue;
        };
        let attr = method.attrs.remove(index);
        let tool_args = match &attr.meta {
            syn::Meta::Path(_) => TokenStream::new(),
            syn::Meta::List(list) => list.tokens.clone(),
            syn::Meta::NameValue(nv) => {
                errors.spanned(nv, "write `#[tool]` or `#[tool(…)]`");
                continue;
            }
        };
        let mut local = Errors::default();
        let mut tool_args = args::parse(tool_args, &mut local);
        if tool_args.krate.is_none() {
            tool_args.krate.clone_from(&krate);
        }
        let params = params::analyze(&mut method.sig, &mut local, true);
        let func = ItemFn {
            attrs: method.attrs.clone(),
            vis: method.vis.clone(),
            modifiers: method.modifiers.clone(),
            sig: method.sig.clone(),
            block: Box::new(method.block.clone()),
        };
        match expand::prepare(&func, &tool_args, &params, default_crate, local) {
            Ok(prepared) => tools.push((func, tool_args, params, prepared)),
            Err(e) => errors.push(e),
        }
    }
    if tools.is_empty() && errors.is_empty() {
        errors.spanned(
            &block.self_ty,
            "`#[tools]` found no method marked `#[tool]` in this impl block",
        );
    }
    if let Err(e) = errors.finish() {
        let e = e.into_compile_error();
        return Ok(quote!(#block #e));
    }

    let tool_types: Vec<syn::Ident> = tools
        .iter()
        .map(|(func, ..)| {
            format_ident!(
                "{}{}Tool",
                self_ident,
                camel(&unraw(&func.sig.ident)),
                span = func.sig.ident.span()
            )
        })
        .collect();
    let mut expansions = Vec::new();
    for ((func, tool_args, params, prepared), tool_type) in tools.iter().zip(&tool_types) {
        let target = Target::Method {
            self_ty: &self_ty,
            tool_type,
            vis: vis_override.as_ref(),
            map_definition: map_definition.as_ref(),
        };
        expansions.push(prepared.generated(func, tool_args, params, target).emit());
    }

    let krate_path: syn::Path = match &krate {
        Some(path) => path.clone(),
        None => syn::parse_str(default_crate)?,
    };
    let p = quote!(#krate_path::__private);
    let vis = vis_override.clone().unwrap_or_else(|| {
        tools
            .first()
            .map(|(func, ..)| func.vis.clone())
            .unwrap_or(syn::Visibility::Inherited)
    });
    let tool_fns = tools
        .iter()
        .map(|(func, ..)| format_ident!("{}_tool", unraw(&func.sig.ident)));
    let cfgs = tools.iter().map(|(func, ..)| {
        let cfgs = func.attrs.iter().filter(|a| a.path().is_ident("cfg"));
        quote!(#(#cfgs)*)
    });
    Ok(quote! {
        #block

        #(#expansions)*

        impl #self_ty {
            /// Every tool of this `#[tools]` impl block, sharing this state, in
            /// declaration order.
            #vis fn tools(self: &::std::sync::Arc<Self>) -> ::std::vec::Vec<::std::sync::Arc<dyn #p::Tool>> {
                let mut tools: ::std::vec::Vec<::std::sync::Arc<dyn #p::Tool>> = ::std::vec::Vec::new();
                #(
                    #cfgs
                    tools.push(::std::sync::Arc::new(self.#tool_fns()));
                )*
                tools
            }
        }
    })
}

/// The arguments of `#[tools(...)]`.
#[derive(Default)]
struct BlockArgs {
    /// `crate = "…"`: where generated code finds core.
    krate: Option<syn::Path>,
    /// `vis = "pub"`: the visibility of every generated item (tool types, their
    /// constructors, `tools()`), instead of the methods' own. Lets a block keep its
    /// methods (and their parameter types) private while the tools are public.
    vis: Option<syn::Visibility>,
    /// `map_definition = "Self::…"`: a `fn(&Self, &mut ToolDefinition)` that every
    /// `<method>_tool()` (and so `tools()`) applies to the definition it builds, for
    /// what depends on the state (a timeout from a client's, a size limit from
    /// configuration). The tool's name must stay as it is.
    map_definition: Option<syn::Path>,
}

/// `#[tools]`, `#[tools(crate = "…", vis = "…", map_definition = "…")]`.
fn parse_args(args: TokenStream) -> syn::Result<BlockArgs> {
    let mut out = BlockArgs::default();
    let parser = syn::meta::parser(|meta| {
        if meta.path.is_ident("crate") {
            let lit: syn::LitStr = meta.value()?.parse()?;
            out.krate = Some(lit.parse::<syn::Path>().map_err(|_| {
                syn::Error::new_spanned(&lit, "`crate` must be a path, e.g. \"::iris::core\"")
            })?);
            Ok(())
        } else if meta.path.is_ident("vis") {
            let lit: syn::LitStr = meta.value()?.parse()?;
            out.vis = Some(lit.parse::<syn::Visibility>().map_err(|_| {
                syn::Error::new_spanned(
                    &lit,
                    "`vis` must be a visibility, e.g. \"pub\" or \"pub(crate)\"",
                )
            })?);
            Ok(())
        } else if meta.path.is_ident("map_definition") {
            let lit: syn::LitStr = meta.value()?.parse()?;
            out.map_definition = Some(lit.parse::<syn::Path>().map_err(|_| {
                syn::Error::new_spanned(
                    &lit,
                    "`map_definition` must be the path of a function, e.g. \"Self::definition_for\"",
                )
            })?);
            Ok(())
        } else {
            Err(meta.error(
                "unknown `#[tools]` argument; expected `crate = \"…\"`, `vis = \"…\"` or \
                 `map_definition = \"…\"`",
            ))
        }
    });
    syn::parse::Parser::parse2(parser, args)?;
    Ok(out)
}

fn check_block(block: &ItemImpl) -> syn::Result<()> {
    if let Some((path, _)) = &block.trait_ {
        return Err(syn::Error::new_spanned(
            path,
            "`#[tools]` goes on an inherent impl block, not a trait impl",
        ));
    }
    if !block.generics.params.is_empty() || block.generics.where_clause.is_some() {
        return Err(syn::Error::new_spanned(
            &block.generics,
            "a `#[tools]` impl block cannot be generic: each tool's input type and schema \
             must be concrete",
        ));
    }
    Ok(())
}

/// The last path segment of the self type, for naming the generated tool types.
fn self_ident(ty: &Type) -> syn::Result<syn::Ident> {
    match ty {
        Type::Path(path) if path.qself.is_none() => path
            .path
            .segments
            .last()
            .map(|s| s.ident.clone())
            .ok_or_else(|| syn::Error::new_spanned(ty, "expected a type name")),
        other => Err(syn::Error::new_spanned(
            other,
            "`#[tools]` goes on `impl TypeName { … }`",
        )),
    }
}

/// `read_file` → `ReadFile`.
fn camel(snake: &str) -> String {
    snake
        .split('_')
        .filter(|part| !part.is_empty())
        .map(|part| {
            let mut chars = part.chars();
            chars.next().map_or_else(String::new, |first| {
                first.to_uppercase().chain(chars).collect()
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)] // Tests fail loudly on purpose.

    use super::*;

    fn expand(item: TokenStream) -> Result<String, String> {
        match tools(TokenStream::new(), item, expand::CORE_PATH) {
            Ok(tokens) => {
                let text = tokens.to_string();
                if text.contains("compile_error") {
                    Err(text)
                } else {
                    syn::parse2::<syn::File>(tokens)
                        .map(|_| text)
                        .map_err(|e| e.to_string())
                }
            }
            Err(e) => Err(e.to_string()),
        }
    }

    #[test]
    fn methods_become_tools_over_shared_state() {
        let out = expand(quote! {
            impl Files {
                /// Read a file from the workspace.
                #[tool(capabilities(read))]
                async fn read_file(&self, file_path: String) -> String { file_path }
                fn helper(&self) {}
            }
        })
        .unwrap_or_else(|e| panic!("{e}"));
        for fragment in [
            "struct FilesReadFileTool",
            "fn read_file_tool",
            "fn read_file_definition",
            "fn tools",
            "self . __state . read_file",
            "fn helper",
        ] {
            assert!(out.contains(fragment), "`{fragment}` not in {out}");
        }
    }

    #[test]
    fn bad_blocks_and_receivers_are_errors() {
        let cases = [
            (
                quote!(impl Tool for Files { #[tool] async fn a(&self) {} }),
                "not a trait impl",
            ),
            (
                quote!(
                    impl<T> Files<T> {
                        #[tool]
                        async fn a(&self) {}
                    }
                ),
                "cannot be generic",
            ),
            (quote!(impl Files { fn a(&self) {} }), "found no method"),
            (
                quote!(impl Files { #[tool] async fn a(&mut self) {} }),
                "takes `&self`",
            ),
            (
                quote!(impl Files { #[tool] async fn a(x: u8) {} }),
                "takes `&self`",
            ),
            (
                quote!(impl Files { #[tool] async fn a(self: Arc<Self>) {} }),
                "takes `&self`",
            ),
            (
                quote!(impl Files { #[tool] async fn a(self: &Arc<Files>) {} }),
                "takes `&self`",
            ),
            (
                quote!(impl Files { #[tool] async fn a(self: &mut Arc<Self>) {} }),
                "takes `&self`",
            ),
        ];
        for (item, expect) in cases {
            let err = expand(item.clone()).expect_err("expected an error");
            assert!(err.contains(expect), "`{expect}` not in {err} for {item}");
        }
    }

    #[test]
    fn methods_may_take_the_state_arc() {
        let out = expand(quote! {
            impl Files {
                /// Read a file from the workspace.
                #[tool(capabilities(read))]
                async fn read_file(self: &Arc<Self>, file_path: String) -> String { file_path }
                /// List files.
                #[tool(execution_mode = "thread")]
                fn list_files(self: &std::sync::Arc<Self>) {}
            }
        })
        .unwrap_or_else(|e| panic!("{e}"));
        for fragment in [
            "fn read_file (self : & Arc < Self >",
            "self . __state . read_file",
            "__state . list_files",
        ] {
            assert!(out.contains(fragment), "`{fragment}` not in {out}");
        }
    }

    #[test]
    fn block_and_parse_arguments() {
        let item = quote! {
            impl Web {
                /// Search the web.
                #[tool(name = "web_search", normalize_input, input_error = "crate::input::refine")]
                async fn search(&self, query: String) -> String { query }
            }
        };
        let out = tools(
            quote!(vis = "pub", map_definition = "Self::finish"),
            item,
            expand::CORE_PATH,
        )
        .map(|t| t.to_string())
        .unwrap_or_else(|e| panic!("{e}"));
        assert!(!out.contains("compile_error"), "{out}");
        for fragment in [
            "pub struct WebSearchTool",
            "pub fn search_tool",
            "pub fn search_definition",
            "pub fn tools",
            "pub fn state",
            "Self :: finish (self , & mut __definition) ;",
            "& self . __definition",
            "crate :: input :: refine (",
            "derive (:: iris_tools_core :: __private :: serde :: Serialize",
            "to_value (& __parsed . 0) . unwrap_or (raw)",
            "async fn search (& self , query : String)",
        ] {
            assert!(out.contains(fragment), "`{fragment}` not in {out}");
        }
        // Without the options: the method's visibility, the raw input, no hooks.
        let plain = expand(quote! {
            impl Web {
                /// Search the web.
                #[tool(name = "web_search")]
                async fn search(&self, query: String) -> String { query }
            }
        })
        .unwrap_or_else(|e| panic!("{e}"));
        assert!(plain.contains("struct WebSearchTool"), "{plain}");
        assert!(!plain.contains("pub struct"), "{plain}");
        for absent in [
            "refine",
            "Self :: finish",
            "derive (:: iris_tools_core :: __private :: serde :: Serialize",
            "to_value",
        ] {
            assert!(!plain.contains(absent), "`{absent}` in {plain}");
        }

        let errors = [
            (quote!(vis = "nope nope"), "`vis` must be a visibility"),
            (
                quote!(map_definition = "1x"),
                "`map_definition` must be the path",
            ),
            (quote!(colour = "red"), "unknown `#[tools]` argument"),
        ];
        let item = quote!(impl Web { #[tool] async fn a(&self) {} });
        for (args, expect) in errors {
            let Err(err) = tools(args.clone(), item.clone(), expand::CORE_PATH) else {
                panic!("expected an error for {args}");
            };
            assert!(
                err.to_string().contains(expect),
                "`{expect}` not in {err} for {args}"
            );
        }
        let Err(bad_hook) = expand(quote! {
            impl Web { #[tool(input_error = "not a path")] async fn a(&self) {} }
        }) else {
            panic!("expected an error for a bad `input_error`");
        };
        assert!(
            bad_hook.contains("must be the path of a function"),
            "{bad_hook}"
        );
    }

    #[test]
    fn camel_case_names() {
        assert_eq!(camel("read_file"), "ReadFile");
        assert_eq!(camel("web__search"), "WebSearch");
        assert_eq!(camel("x"), "X");
    }
}
