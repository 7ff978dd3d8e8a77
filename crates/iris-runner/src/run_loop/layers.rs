//! The state a tool layer keeps per run, behind one extension point.
//!
//! A run carries, beside its record, the live state of the layers its calls go
//! through: which deferred tools `tool_search` revealed (iris-discovery), what the
//! file tools observed (iris-files), the answers waiting for MCP calls that stopped
//! for input (iris-mcp). Each is a [`LayerState`]: restored from the run record when
//! the run starts or resumes, attached to every call's context, and written back to
//! the record before each save. [`LayerStates`] holds them in one map keyed by type
//! (like `http::Extensions`), so a new layer adds an impl and one line to [`LAYERS`],
//! never a field of `RunState`.

use std::any::{Any, TypeId};
use std::collections::HashMap;
use std::sync::Arc;

use iris_discovery::DisclosureState;
use iris_files::ReadState;
use iris_mcp::McpInputResumes;
use iris_tools_core::ToolExecutionContext;

use crate::store::RunRecord;

/// One layer's state in a run; see the [module docs](self).
pub(crate) trait LayerState: Any + Send + Sync {
    /// The state `record` holds (a new run's record holds none yet).
    fn restore(record: &RunRecord) -> Self
    where
        Self: Sized;

    /// Gives one call's context what the layer reads there.
    fn attach(&self, ctx: ToolExecutionContext) -> ToolExecutionContext;

    /// Writes what must survive the process into the record (before each save).
    fn save(&self, record: &mut RunRecord);
}

/// `LayerState` without its `Sized` constructor, for the map.
trait ErasedLayerState: Send + Sync {
    fn attach(&self, ctx: ToolExecutionContext) -> ToolExecutionContext;
    fn save(&self, record: &mut RunRecord);
    fn as_any(&self) -> &dyn Any;
    fn as_any_mut(&mut self) -> &mut dyn Any;
}

impl<T: LayerState> ErasedLayerState for T {
    fn attach(&self, ctx: ToolExecutionContext) -> ToolExecutionContext {
        LayerState::attach(self, ctx)
    }
    fn save(&self, record: &mut RunRecord) {
        LayerState::save(self, record);
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
    fn as_any_mut(&mut self) -> &mut dyn Any {
        self
    }
}

/// A restorer of one layer's state.
type Restore = fn(&RunRecord) -> (TypeId, Box<dyn ErasedLayerState>);

fn restore<T: LayerState>(record: &RunRecord) -> (TypeId, Box<dyn ErasedLayerState>) {
    (TypeId::of::<T>(), Box::new(T::restore(record)))
}

/// Every layer whose state a run keeps, in the order their context extensions are
/// attached.
const LAYERS: [Restore; 3] = [
    restore::<DisclosureState>,
    restore::<Arc<ReadState>>,
    restore::<McpInputResumes>,
];

/// A run's layer states, one per type.
pub(crate) struct LayerStates {
    order: Vec<TypeId>,
    states: HashMap<TypeId, Box<dyn ErasedLayerState>>,
}

impl LayerStates {
    /// Every layer's state as `record` holds it.
    pub(crate) fn restore(record: &RunRecord) -> Self {
        let mut order = Vec::with_capacity(LAYERS.len());
        let mut states = HashMap::with_capacity(LAYERS.len());
        for restore in LAYERS {
            let (id, state) = restore(record);
            order.push(id);
            states.insert(id, state);
        }
        Self { order, states }
    }

    /// The state of layer `T`. Every type in [`LAYERS`] is there.
    pub(crate) fn get<T: LayerState>(&self) -> Option<&T> {
        self.states
            .get(&TypeId::of::<T>())
            .and_then(|s| s.as_any().downcast_ref())
    }

    /// The state of layer `T`, to change.
    pub(crate) fn get_mut<T: LayerState>(&mut self) -> Option<&mut T> {
        self.states
            .get_mut(&TypeId::of::<T>())
            .and_then(|s| s.as_any_mut().downcast_mut())
    }

    /// Gives one call's context every layer's extension.
    pub(crate) fn attach(&self, mut ctx: ToolExecutionContext) -> ToolExecutionContext {
        for id in &self.order {
            if let Some(state) = self.states.get(id) {
                ctx = state.attach(ctx);
            }
        }
        ctx
    }

    /// Writes every layer's state into the record.
    pub(crate) fn save(&self, record: &mut RunRecord) {
        for id in &self.order {
            if let Some(state) = self.states.get(id) {
                state.save(record);
            }
        }
    }
}

/// The deferred tools `tool_search` revealed: read by `tool_search` and by each
/// request's tool list; kept in `record.revealed`.
impl LayerState for DisclosureState {
    fn restore(record: &RunRecord) -> Self {
        DisclosureState::from_revealed(record.revealed.clone())
    }
    fn attach(&self, ctx: ToolExecutionContext) -> ToolExecutionContext {
        DisclosureState::attach(self, ctx)
    }
    fn save(&self, record: &mut RunRecord) {
        record.revealed = self.revealed();
    }
}

/// What the file tools observed (read-before-write, freshness); kept in
/// `record.read_state`.
impl LayerState for Arc<ReadState> {
    fn restore(record: &RunRecord) -> Self {
        Arc::new(ReadState::restore(record.read_state.clone()))
    }
    fn attach(&self, mut ctx: ToolExecutionContext) -> ToolExecutionContext {
        ctx.extensions.insert_arc(Arc::clone(self));
        ctx
    }
    fn save(&self, record: &mut RunRecord) {
        record.read_state = self.snapshot();
    }
}

/// Answers to MCP calls that stopped for input, by call id, for their next run: this
/// process's memory only (a crash before the call runs again asks the server again).
impl LayerState for McpInputResumes {
    fn restore(_record: &RunRecord) -> Self {
        McpInputResumes::default()
    }
    fn attach(&self, mut ctx: ToolExecutionContext) -> ToolExecutionContext {
        if !self.0.is_empty() {
            ctx.extensions.insert(self.clone());
        }
        ctx
    }
    fn save(&self, _record: &mut RunRecord) {}
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    /// A record's layer state survives restore → save, and every listed layer is
    /// reachable by its type.
    #[test]
    fn layer_states_round_trip_through_the_record() {
        let mut record: RunRecord = serde_json::from_value(serde_json::json!({
            "run_id": "r", "status": "running", "agent_id": "a", "session_id": "s",
            "created_at_ms": 0, "updated_at_ms": 0, "turns": 0,
            "usage": iris_providers::chat::Usage::default(),
            "revealed": ["deep_tool"], "read_state": [], "pending": null,
            "interaction": null, "output": null, "error": null,
        }))
        .unwrap();
        let mut layers = LayerStates::restore(&record);
        assert_eq!(
            layers.get::<DisclosureState>().unwrap().revealed(),
            ["deep_tool"]
        );
        assert!(layers.get::<Arc<ReadState>>().is_some());
        assert!(layers.get_mut::<McpInputResumes>().unwrap().0.is_empty());
        record.revealed.clear();
        layers.save(&mut record);
        assert_eq!(record.revealed, ["deep_tool"]);
        let ctx = layers.attach(ToolExecutionContext::new("."));
        assert!(ctx.extensions.get::<ReadState>().is_some());
    }
}
