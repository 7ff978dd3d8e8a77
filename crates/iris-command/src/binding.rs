//! [`CommandBinding`]: how tools and child agents reach the root command service.

use std::path::Path;

use crate::config::CommandMode;
use crate::error::CommandError;
use crate::request::{CommandOutcome, CommandRequest, CommandScope};
use crate::service::{CommandService, CommandStopReceipt, StopOperation};

/// What [`CommandBinding::close`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CloseOutcome {
    /// The owner closed the service (or it was already closed).
    Closed,
    /// A borrowed binding does not own the service: nothing was closed.
    NotOwner,
}

/// A handle on a [`CommandService`]: owned by the root agent, borrowed by its children.
///
/// The root creates the service and wraps it with [`CommandBinding::owned`]; a child
/// agent gets [`CommandBinding::borrowed`]. Both run, stop and drain commands on the
/// same service (one container in Docker mode). Only the owner closes it: `close` on a
/// borrowed binding is a documented no-op that returns [`CloseOutcome::NotOwner`], so a
/// child's teardown can call it unconditionally without ending the parent's
/// environment. The binding does not expose the service itself, so a borrower cannot
/// reach `CommandService::close` either. Cloning keeps ownership as it is.
///
/// ```
/// use iris_command::{CloseOutcome, CommandBinding, CommandConfig, CommandService};
/// # tokio::runtime::Builder::new_current_thread().enable_all().build()?.block_on(async {
/// let workspace = tempfile::tempdir()?;
/// let root = CommandBinding::owned(CommandService::new(CommandConfig::native(), workspace.path())?);
/// let child = CommandBinding::borrowed(&root);
/// assert_eq!(child.close().await?, CloseOutcome::NotOwner);
/// assert!(!root.is_closed());
/// assert_eq!(root.close().await?, CloseOutcome::Closed);
/// assert!(child.is_closed());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// # })?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone)]
pub struct CommandBinding {
    service: CommandService,
    owner: bool,
}

impl CommandBinding {
    /// The root's binding: it owns the service and may close it.
    pub fn owned(service: CommandService) -> Self {
        Self {
            service,
            owner: true,
        }
    }

    /// A child's binding on the root's service; it never closes it.
    pub fn borrowed(root: &CommandBinding) -> Self {
        Self {
            service: root.service.clone(),
            owner: false,
        }
    }

    /// Whether this binding owns the service.
    pub fn is_owner(&self) -> bool {
        self.owner
    }

    /// Native or Docker.
    pub fn mode(&self) -> CommandMode {
        self.service.mode()
    }

    /// The service's canonical workspace root.
    pub fn workspace_root(&self) -> &Path {
        self.service.workspace_root()
    }

    /// The root cap of every call's deadline (`CommandConfig::timeout_seconds`), for a
    /// tool that must know its deadline before the command starts (`run_tool_script`
    /// bounds its inner calls by it).
    pub fn timeout_seconds(&self) -> f64 {
        self.service.config().timeout_seconds
    }

    /// The sandbox policy of the model's commands (`CommandConfig::sandbox`).
    pub fn sandbox_policy(&self) -> &iris_sandbox::SandboxPolicy {
        &self.service.config().sandbox
    }

    /// Whether the service is closed.
    pub fn is_closed(&self) -> bool {
        self.service.is_closed()
    }

    /// See [`CommandService::prepare`]; idempotent, so a borrower may call it too.
    pub async fn prepare(&self) -> Result<(), CommandError> {
        self.service.prepare().await
    }

    /// See [`CommandService::execute`].
    pub async fn execute(
        &self,
        scope: &CommandScope,
        request: CommandRequest,
    ) -> Result<CommandOutcome, CommandError> {
        self.service.execute(scope, request).await
    }

    /// See [`CommandService::stop`].
    pub fn stop(&self, scope: &CommandScope) -> StopOperation {
        self.service.stop(scope)
    }

    /// See [`CommandService::wait_drained`].
    pub async fn wait_drained(&self, receipt: &CommandStopReceipt) -> Result<(), CommandError> {
        self.service.wait_drained(receipt).await
    }

    /// Closes the service when this binding owns it; a no-op for a borrower.
    pub async fn close(&self) -> Result<CloseOutcome, CommandError> {
        if !self.owner {
            return Ok(CloseOutcome::NotOwner);
        }
        self.service.close().await?;
        Ok(CloseOutcome::Closed)
    }
}
