#![doc = include_str!("../README.md")]

mod args;
mod ctxt;
mod docs;
mod expand;
mod json;
mod methods;
mod params;

use proc_macro::TokenStream;

/// Turns a function into an Iris tool; see the [crate documentation](crate) for the
/// arguments, the parameter attributes and what is generated.
#[proc_macro_attribute]
pub fn tool(args: TokenStream, item: TokenStream) -> TokenStream {
    let expanded = expand::tool(args.into(), item.into(), expand::CORE_PATH);
    expanded
        .unwrap_or_else(syn::Error::into_compile_error)
        .into()
}

/// `#[tool]` with generated paths rooted at `::iris::core`, for crates that depend only
/// on the `iris` facade. Not public API: the facade re-exports it as `tool`.
#[doc(hidden)]
#[proc_macro_attribute]
pub fn tool_in_iris_facade(args: TokenStream, item: TokenStream) -> TokenStream {
    let expanded = expand::tool(args.into(), item.into(), expand::FACADE_PATH);
    expanded
        .unwrap_or_else(syn::Error::into_compile_error)
        .into()
}

/// Turns the `#[tool]` methods of an inherent impl block into Iris tools over shared
/// state: each method takes `&self` (or `self: &Arc<Self>`), and `state.<method>_tool()`
/// (on an `Arc` of the state) builds its tool; `state.tools()` builds them all. See the
/// [crate documentation](crate).
#[proc_macro_attribute]
pub fn tools(args: TokenStream, item: TokenStream) -> TokenStream {
    let expanded = methods::tools(args.into(), item.into(), expand::CORE_PATH);
    expanded
        .unwrap_or_else(syn::Error::into_compile_error)
        .into()
}

/// `#[tools]` with generated paths rooted at `::iris::core`, for crates that depend only
/// on the `iris` facade. Not public API: the facade re-exports it as `tools`.
#[doc(hidden)]
#[proc_macro_attribute]
pub fn tools_in_iris_facade(args: TokenStream, item: TokenStream) -> TokenStream {
    let expanded = methods::tools(args.into(), item.into(), expand::FACADE_PATH);
    expanded
        .unwrap_or_else(syn::Error::into_compile_error)
        .into()
}
