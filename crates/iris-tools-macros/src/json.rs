//! Turns JSON checked at compile time (the `examples`) into code that rebuilds it,
//! so the generated tool never parses JSON at run time and has no error path for it.

use proc_macro2::{Literal, TokenStream};
use quote::quote;
use serde_json::Value;

/// An expression of type `serde_json::Value` equal to `value`; `json` is the path of
/// the `serde_json` crate.
pub(crate) fn value_tokens(value: &Value, json: &TokenStream) -> TokenStream {
    match value {
        Value::Null => quote!(#json::Value::Null),
        Value::Bool(b) => quote!(#json::Value::Bool(#b)),
        Value::Number(n) => {
            let lit = if let Some(u) = n.as_u64() {
                Literal::u64_suffixed(u)
            } else if let Some(i) = n.as_i64() {
                Literal::i64_suffixed(i)
            } else {
                Literal::f64_suffixed(n.as_f64().unwrap_or(0.0))
            };
            quote!(#json::Value::from(#lit))
        }
        Value::String(s) => quote!(#json::Value::String(::std::string::String::from(#s))),
        Value::Array(items) => {
            let items = items.iter().map(|v| value_tokens(v, json));
            quote!(#json::Value::Array(::std::vec![#(#items),*]))
        }
        Value::Object(map) => {
            let keys = map.keys();
            let values = map.values().map(|v| value_tokens(v, json));
            quote!({
                let mut object = #json::Map::new();
                #(object.insert(::std::string::String::from(#keys), #values);)*
                #json::Value::Object(object)
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_become_constructors() {
        let json = quote!(J);
        let cases = [
            ("null", "J :: Value :: Null"),
            ("true", "J :: Value :: Bool (true)"),
            ("7", "J :: Value :: from (7u64)"),
            ("-7", "J :: Value :: from (- 7i64)"),
            ("1.5", "J :: Value :: from (1.5f64)"),
            (
                "\"a\"",
                "J :: Value :: String (:: std :: string :: String :: from (\"a\"))",
            ),
            ("[]", "J :: Value :: Array (:: std :: vec ! [])"),
        ];
        for (text, expect) in cases {
            let value: Value = serde_json::from_str(text).unwrap_or(Value::Null);
            assert_eq!(value_tokens(&value, &json).to_string(), expect, "{text}");
        }
    }
}
