//! The generated Python side: the `iris_tools` module and the program that wraps the
//! model's code.
//!
//! The module is built from the callable tools' definitions: one function per tool
//! (its name, its schema's properties as parameters, its description and the
//! properties' descriptions as the docstring), plus `call(name, **arguments)` for any
//! of them, the `ToolError(code, message)` exception and the `ToolResult` a call
//! returns (`.text`, `.data`; `str()` is the text). Each call sends one JSON line over
//! a connection to the host's Unix socket and reads one JSON line back, so calls from
//! several threads run in parallel (up to [`crate::MAX_CONCURRENT_CALLS`] at once; the
//! host leaves further connections waiting). Outside the command sandbox a call opens
//! its own connection; inside it (where no socket may be opened) the sandbox helper has
//! pre-connected [`crate::MAX_CONCURRENT_CALLS`] connections, named in
//! [`CHANNEL_FDS_ENV`], and each call borrows one of them. A connection that fails or
//! closes without a reply raises `ToolError` with [`crate::codes::SCRIPT_CHANNEL_CLOSED`].
//!
//! The program the command service runs is a short prelude that installs the module
//! in `sys.modules` and then executes the model's code with `exec(compile(code,
//! "<script>", "exec"))`, so tracebacks show the model's own line numbers. It reaches
//! Python on stdin ([`BOOTSTRAP`] is the `-c` argument), so the channel's token never
//! appears in a command line.

use std::fmt::Write as _;

use iris_tools_core::ToolDefinition;
use serde_json::Value;

/// Python keywords and soft keywords a generated name may not be.
const PY_KEYWORDS: [&str; 38] = [
    "False", "None", "True", "and", "as", "assert", "async", "await", "break", "class", "continue",
    "def", "del", "elif", "else", "except", "finally", "for", "from", "global", "if", "import",
    "in", "is", "lambda", "nonlocal", "not", "or", "pass", "raise", "return", "try", "while",
    "with", "yield", "match", "case", "type",
];

/// Names the module defines itself; a tool with one of these names is reached through
/// `call(name, ...)` only.
const RESERVED: [&str; 4] = ["call", "ToolError", "ToolResult", "TOOLS"];

/// The variable in which the sandbox helper names the pre-connected channel
/// descriptors (comma-separated).
pub(crate) const CHANNEL_FDS_ENV: &str = "IRIS_SCRIPT_CHANNEL_FDS";

/// The fixed part of the module: protocol, exception and result types.
const RUNTIME: &str = r#"
import os as _os
import socket as _socket

# Inside the command sandbox no socket may be opened: the helper pre-connected these.
_FDS = [int(f) for f in _os.environ.pop("IRIS_SCRIPT_CHANNEL_FDS", "").split(",") if f]
if _FDS:
    import threading as _threading

    _POOL = [_socket.socket(fileno=f) for f in _FDS]
    _FREE = _threading.Condition()


def _connection():
    if not _FDS:
        sock = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
        try:
            sock.connect(_PATH)
        except OSError:
            sock.close()
            raise
        return sock
    with _FREE:
        while not _POOL:
            _FREE.wait()
        return _POOL.pop()


def _release(sock):
    if not _FDS:
        sock.close()
        return
    with _FREE:
        _POOL.append(sock)
        _FREE.notify()

try:
    import json as _json

    _FORMAT = "json"

    def _encode(value):
        return _json.dumps(value)

    def _decode(raw):
        return _json.loads(raw)
except ImportError:
    # Minimal interpreters (Debian's python3-minimal) have no json module: requests
    # are encoded here, and the host answers with a Python literal.
    import ast as _ast

    _FORMAT = "python"

    def _encode_str(text):
        out = ['"']
        for ch in text:
            if ch == '"':
                out.append('\\"')
            elif ch == "\\":
                out.append("\\\\")
            elif ord(ch) < 0x20:
                out.append("\\u%04x" % ord(ch))
            else:
                out.append(ch)
        out.append('"')
        return "".join(out)

    def _encode(value):
        if value is None:
            return "null"
        if value is True:
            return "true"
        if value is False:
            return "false"
        if isinstance(value, (int, float)):
            return repr(value)
        if isinstance(value, str):
            return _encode_str(value)
        if isinstance(value, (list, tuple)):
            return "[" + ",".join(_encode(v) for v in value) + "]"
        if isinstance(value, dict):
            return "{" + ",".join(_encode_str(str(k)) + ":" + _encode(v) for k, v in value.items()) + "}"
        raise TypeError(f"cannot send a {type(value).__name__} to a tool")

    def _decode(raw):
        return _ast.literal_eval(raw.decode("utf-8"))


class ToolError(Exception):
    """A tool call failed: `code` is the stable SCREAMING_SNAKE code, `message` one line."""

    def __init__(self, code, message, details=None):
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message
        self.details = details or {}


class ToolResult:
    """What a tool call returned: `text` (what the model would have read) and `data`."""

    def __init__(self, text, data):
        self.text = text
        self.data = data

    def __str__(self):
        return self.text

    def __repr__(self):
        return f"ToolResult(text={self.text!r}, data={self.data!r})"


def call(name, **arguments):
    """Call any callable tool by name with keyword arguments; raises ToolError."""
    sock = None
    try:
        sock = _connection()
        line = _encode({"token": _TOKEN, "tool": name, "arguments": arguments, "format": _FORMAT})
        sock.sendall(line.encode("utf-8") + b"\n")
        chunks = []
        while True:
            chunk = sock.recv(1 << 16)
            if not chunk:
                break
            chunks.append(chunk)
            if chunk.endswith(b"\n"):
                break
    except OSError as e:
        raise ToolError("SCRIPT_CHANNEL_CLOSED", f"the host channel failed: {e}") from None
    finally:
        if sock is not None:
            _release(sock)
    raw = b"".join(chunks)
    if not raw:
        raise ToolError("SCRIPT_CHANNEL_CLOSED", "the host closed the channel without a reply")
    reply = _decode(raw)
    error = reply.get("error")
    if error:
        raise ToolError(error.get("code", "TOOL_FAILED"), error.get("message", ""), error.get("details"))
    return ToolResult(reply.get("text", ""), reply.get("data") or {})


# What generated functions call: a tool property may be named `call` (it becomes a
# parameter that shadows the function), never `_call`.
_call = call
_UNSET = object()


def _args(pairs):
    return {k: v for k, v in pairs if v is not _UNSET}
"#;

/// Whether `name` can be a Python parameter or function name here.
fn is_identifier(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
        && !PY_KEYWORDS.contains(&name)
        && !name.starts_with('_')
}

/// A Python string literal for any text (JSON string syntax is valid Python).
fn py_str(text: &str) -> String {
    serde_json::to_string(text).unwrap_or_else(|_| "\"\"".to_owned())
}

/// One function: required properties first (positional or keyword), then optional
/// ones as keyword-only with an "unset" default, so only what the script passes is
/// sent (the tool's own defaults apply, as for the model).
///
/// Every name the body uses besides the parameters starts with `_` (`_extra`,
/// `_arguments`, `_args`, `_call`, `_UNSET`): a property is a parameter only when
/// [`is_identifier`] admits it, which refuses a leading `_`, so no property can
/// collide with them (a property named `extra` or `call` is an ordinary parameter).
fn function(def: &ToolDefinition, out: &mut String) {
    let schema = def.input_schema.as_object();
    let properties = schema
        .and_then(|s| s.get("properties"))
        .and_then(Value::as_object);
    let required: Vec<&str> = schema
        .and_then(|s| s.get("required"))
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let mut params = Vec::new();
    let mut optional = Vec::new();
    let mut doc_args = String::new();
    let mut all_named = true;
    if let Some(properties) = properties {
        for (name, prop) in properties {
            if !is_identifier(name) {
                all_named = false;
                continue;
            }
            if required.contains(&name.as_str()) {
                params.push(name.clone());
            } else {
                optional.push(name.clone());
            }
            let description = prop
                .get("description")
                .and_then(Value::as_str)
                .unwrap_or("");
            let kind = match prop.get("type") {
                Some(Value::String(t)) => t.clone(),
                Some(other) => other.to_string(),
                None => "any".to_owned(),
            };
            let req = if required.contains(&name.as_str()) {
                "required"
            } else {
                "optional"
            };
            let _ = writeln!(
                doc_args,
                "    {name} ({kind}, {req}): {}",
                description.replace('\n', " ")
            );
        }
    }
    let mut signature = params.clone();
    if !optional.is_empty() {
        signature.push("*".to_owned());
        signature.extend(optional.iter().map(|o| format!("{o}=_UNSET")));
    }
    if !all_named {
        signature.push("**_extra".to_owned());
    }
    let mut doc = def.description.clone();
    if !doc_args.is_empty() {
        doc.push_str("\n\nArgs:\n");
        doc.push_str(&doc_args);
    }
    doc.push_str("\nReturns a ToolResult (.text, .data); raises ToolError(code, message).");
    let pairs: Vec<String> = params
        .iter()
        .chain(&optional)
        .map(|p| format!("({}, {p})", py_str(p)))
        .collect();
    let _ = writeln!(out, "\n\ndef {}({}):", def.name, signature.join(", "));
    let _ = writeln!(out, "    {}", py_str(&doc));
    let _ = write!(out, "    _arguments = _args([{}])", pairs.join(", "));
    if !all_named {
        out.push_str("\n    _arguments.update(_extra)");
    }
    let _ = writeln!(
        out,
        "\n    return _call({}, **_arguments)",
        py_str(&def.name)
    );
}

/// The `iris_tools` module source for these tools, talking to `socket_path` with
/// `token`.
pub(crate) fn module_source(tools: &[ToolDefinition], socket_path: &str, token: &str) -> String {
    let mut out = String::with_capacity(4096 + tools.len() * 512);
    out.push_str(
        "\"\"\"Tools of the current request; each call runs through the host's executor.\"\"\"\n",
    );
    let _ = writeln!(out, "_PATH = {}", py_str(socket_path));
    let _ = writeln!(out, "_TOKEN = {}", py_str(token));
    out.push_str(RUNTIME);
    let mut names = Vec::new();
    for def in tools {
        names.push(def.name.clone());
        if is_identifier(&def.name) && !RESERVED.contains(&def.name.as_str()) {
            function(def, &mut out);
        }
    }
    let listed: Vec<String> = names.iter().map(|n| py_str(n)).collect();
    let _ = writeln!(out, "\n\nTOOLS = [{}]", listed.join(", "));
    out
}

/// The `python3 -c` argument: it reads the program from stdin (see [`program`]).
pub(crate) const BOOTSTRAP: &str =
    "import sys\nexec(compile(sys.stdin.read(), \"<iris-script>\", \"exec\"))\n";

/// The program the command service runs: install the module, then run the model's
/// code as `__main__` under the file name `<script>`.
pub(crate) fn program(module: &str, code: &str) -> String {
    format!(
        "import sys as _iris_sys, types as _iris_types\n\
         _iris_m = _iris_types.ModuleType(\"iris_tools\")\n\
         exec(compile({module}, \"iris_tools.py\", \"exec\"), _iris_m.__dict__)\n\
         _iris_sys.modules[\"iris_tools\"] = _iris_m\n\
         _iris_code = {code}\n\
         del _iris_m, _iris_types\n\
         exec(compile(_iris_code, \"<script>\", \"exec\"), {{\"__name__\": \"__main__\", \"__builtins__\": __builtins__}})\n",
        module = py_str(module),
        code = py_str(code),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn functions_follow_the_schema() {
        let def = ToolDefinition::new(
            "grep_search",
            "Search files.",
            json!({"type": "object", "properties": {
                "pattern": {"type": "string", "description": "regex"},
                "path": {"type": "string"},
                "bad-name": {"type": "string"}
            }, "required": ["pattern"]}),
        );
        let src = module_source(&[def], "/tmp/s.sock", "t");
        assert!(
            src.contains("def grep_search(pattern, *, path=_UNSET, **_extra):"),
            "{src}"
        );
        assert!(src.contains("pattern (string, required): regex"), "{src}");
        assert!(src.contains("TOOLS = [\"grep_search\"]"));
    }

    /// The code the module raises is the one `codes` documents.
    #[test]
    fn channel_failures_raise_the_documented_code() {
        let quoted = format!("ToolError(\"{}\"", crate::codes::SCRIPT_CHANNEL_CLOSED);
        assert_eq!(RUNTIME.matches(&quoted).count(), 2, "{quoted}");
    }

    #[test]
    fn reserved_and_keyword_names_are_reached_through_call() {
        let call = ToolDefinition::new("call", "x", json!({"type": "object"}));
        let kw = ToolDefinition::new("lambda", "x", json!({"type": "object"}));
        let src = module_source(&[call, kw], "/p", "t");
        assert!(!src.contains("def lambda("));
        assert_eq!(src.matches("def call(").count(), 1);
        assert!(src.contains("TOOLS = [\"call\", \"lambda\"]"));
    }
}
