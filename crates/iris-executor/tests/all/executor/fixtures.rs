//! Fixtures shared by the executor tests: tool builders, a call log, a test clock and
//! a small `tracing` subscriber that records spans and events.

use std::collections::{BTreeMap, HashMap};
use std::fmt::Debug;
use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use iris_executor::Clock;
use iris_tools_core::{
    FnTool, ToolCapability, ToolDefinition, ToolExecutionContext, ToolOutput, ToolRegistry,
};
use serde_json::{Value, json};
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::subscriber::Interest;
use tracing::{Event, Metadata, Subscriber};

/// A definition with an open object schema and the given capabilities.
pub(super) fn def(name: &str, caps: &[ToolCapability]) -> ToolDefinition {
    ToolDefinition::new(
        name,
        format!("Test tool {name}."),
        json!({"type": "object"}),
    )
    .with_capabilities(caps.iter().copied())
}

/// Registers a closure tool.
pub(super) fn register<F, Fut>(registry: &ToolRegistry, def: ToolDefinition, body: F)
where
    F: Fn(Value, ToolExecutionContext) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = ToolOutput> + Send + 'static,
{
    registry.register(FnTool::new(def, body)).unwrap();
}

/// A context whose workspace does not exist: a test that writes an artifact by
/// accident gets an `artifact_error` instead of littering the source tree.
pub(super) fn ctx() -> ToolExecutionContext {
    ToolExecutionContext::new("/nonexistent/iris-executor-tests").session_id("s-test")
}

/// An ordered, shared log of what ran.
#[derive(Debug, Clone, Default)]
pub(super) struct Log(Arc<Mutex<Vec<String>>>);

impl Log {
    pub(super) fn push(&self, entry: impl Into<String>) {
        self.0.lock().unwrap().push(entry.into());
    }

    pub(super) fn take(&self) -> Vec<String> {
        std::mem::take(&mut *self.0.lock().unwrap())
    }
}

/// A breaker clock the test moves by hand.
#[derive(Debug)]
pub(super) struct TestClock {
    base: Instant,
    offset: Mutex<Duration>,
}

impl TestClock {
    pub(super) fn new() -> Arc<Self> {
        Arc::new(Self {
            base: Instant::now(),
            offset: Mutex::new(Duration::ZERO),
        })
    }

    pub(super) fn advance(&self, by: Duration) {
        *self.offset.lock().unwrap() += by;
    }
}

impl Clock for TestClock {
    fn now(&self) -> Instant {
        self.base + *self.offset.lock().unwrap()
    }
}

/// One recorded span: its name and fields (values rendered as strings).
#[derive(Debug, Clone, serde::Serialize)]
pub(super) struct SpanRecord {
    pub(super) name: String,
    pub(super) fields: BTreeMap<String, String>,
}

/// One recorded event: target, level and fields (the message under `message`).
#[derive(Debug, Clone, serde::Serialize)]
pub(super) struct EventRecord {
    pub(super) target: String,
    pub(super) level: String,
    pub(super) fields: BTreeMap<String, String>,
}

#[derive(Debug, Default)]
struct Recorded {
    spans: Vec<SpanRecord>,
    index: HashMap<u64, usize>,
    events: Vec<EventRecord>,
}

/// A minimal subscriber recording `iris*` spans and events. Install it per test with
/// `tracing::subscriber::set_default` on a current-thread runtime.
#[derive(Debug, Clone, Default)]
pub(super) struct Recorder {
    recorded: Arc<Mutex<Recorded>>,
    next_id: Arc<AtomicU64>,
}

impl Recorder {
    pub(super) fn spans(&self) -> Vec<SpanRecord> {
        self.recorded.lock().unwrap().spans.clone()
    }

    pub(super) fn events(&self) -> Vec<EventRecord> {
        self.recorded.lock().unwrap().events.clone()
    }
}

struct FieldMap<'a>(&'a mut BTreeMap<String, String>);

impl Visit for FieldMap<'_> {
    fn record_str(&mut self, field: &Field, value: &str) {
        self.0.insert(field.name().to_owned(), value.to_owned());
    }

    fn record_debug(&mut self, field: &Field, value: &dyn Debug) {
        self.0.insert(field.name().to_owned(), format!("{value:?}"));
    }
}

impl Subscriber for Recorder {
    fn register_callsite(&self, _: &'static Metadata<'static>) -> Interest {
        // `sometimes` keeps `enabled` in charge, so parallel tests that install and
        // drop recorders never leave a callsite cached as disabled.
        Interest::sometimes()
    }

    fn enabled(&self, metadata: &Metadata<'_>) -> bool {
        metadata.target().starts_with("iris")
    }

    fn new_span(&self, attrs: &Attributes<'_>) -> Id {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed) + 1;
        let mut fields = BTreeMap::new();
        attrs.record(&mut FieldMap(&mut fields));
        let mut recorded = self.recorded.lock().unwrap();
        let index = recorded.spans.len();
        recorded.spans.push(SpanRecord {
            name: attrs.metadata().name().to_owned(),
            fields,
        });
        recorded.index.insert(id, index);
        Id::from_u64(id)
    }

    fn record(&self, span: &Id, values: &Record<'_>) {
        let mut recorded = self.recorded.lock().unwrap();
        if let Some(&index) = recorded.index.get(&span.into_u64()) {
            values.record(&mut FieldMap(&mut recorded.spans[index].fields));
        }
    }

    fn record_follows_from(&self, _: &Id, _: &Id) {}

    fn event(&self, event: &Event<'_>) {
        let mut fields = BTreeMap::new();
        event.record(&mut FieldMap(&mut fields));
        self.recorded.lock().unwrap().events.push(EventRecord {
            target: event.metadata().target().to_owned(),
            level: event.metadata().level().to_string(),
            fields,
        });
    }

    fn enter(&self, _: &Id) {}

    fn exit(&self, _: &Id) {}
}
