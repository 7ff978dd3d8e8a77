//! Each inner call is traced as an `execute_tool` span whose parent is the script
//! call's span.

use std::sync::{Arc, Mutex};

use iris_executor::ToolExecutor;
use iris_script::ScriptCallable;
use tracing::Subscriber;
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id};
use tracing_subscriber::layer::{Context, Layer, SubscriberExt as _};
use tracing_subscriber::registry::LookupSpan;

use crate::support::Env;

/// `(call id, the call id of the nearest enclosing execute_tool span)` per span.
type Seen = Arc<Mutex<Vec<(String, Option<String>)>>>;

struct CallId(String);

#[derive(Default)]
struct Visitor(Option<String>);

impl Visit for Visitor {
    fn record_str(&mut self, field: &Field, value: &str) {
        if field.name() == "gen_ai.tool.call.id" {
            self.0 = Some(value.to_owned());
        }
    }
    fn record_debug(&mut self, _field: &Field, _value: &dyn std::fmt::Debug) {}
}

struct Spans(Seen);

impl<S: Subscriber + for<'a> LookupSpan<'a>> Layer<S> for Spans {
    fn on_new_span(&self, attrs: &Attributes<'_>, id: &Id, ctx: Context<'_, S>) {
        if attrs.metadata().name() != "execute_tool" {
            return;
        }
        let mut visitor = Visitor::default();
        attrs.record(&mut visitor);
        let call_id = visitor.0.unwrap_or_default();
        let span = ctx.span(id).unwrap();
        let parent = span
            .scope()
            .skip(1)
            .find_map(|s| s.extensions().get::<CallId>().map(|c| c.0.clone()));
        span.extensions_mut().insert(CallId(call_id.clone()));
        self.0.lock().unwrap().push((call_id, parent));
    }
}

/// The subscriber is this thread's (`set_default`), and tracing caches each callsite's
/// interest process-wide: another test of this binary registering a callsite at the
/// same moment can leave it disabled for this thread (seen once in CI: no span at
/// all). So the check runs alone, in a child process of this test binary.
#[test]
fn inner_calls_are_child_spans_of_the_script_call() {
    if std::env::var_os("IRIS_SPANS_CHILD").is_some() {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap()
            .block_on(spans_of_a_script_call());
        return;
    }
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "spans::inner_calls_are_child_spans_of_the_script_call",
            "--nocapture",
            "--test-threads=1",
        ])
        .env("IRIS_SPANS_CHILD", "1")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && stdout.contains("1 passed"),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

async fn spans_of_a_script_call() {
    let seen: Seen = Arc::default();
    let subscriber = tracing_subscriber::registry().with(Spans(Arc::clone(&seen)));
    let _guard = tracing::subscriber::set_default(subscriber);

    let env = Env::native(ScriptCallable::default()).await;
    env.write("a.txt", "alpha\n");
    let executor = ToolExecutor::new(env.registry.clone());
    let code = "import iris_tools\niris_tools.list_files()\nprint(iris_tools.read_file(file_path='a.txt').text)\n";
    let result = env.script(&executor, code, None).await;
    assert!(!result.is_error(), "{}", result.model_content());
    let seen = seen.lock().unwrap().clone();
    assert_eq!(
        seen,
        vec![
            ("call_1".to_owned(), None),
            ("call_1_s1".to_owned(), Some("call_1".to_owned())),
            ("call_1_s2".to_owned(), Some("call_1".to_owned())),
        ]
    );
    env.close().await;
}
