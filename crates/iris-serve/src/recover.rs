//! Taking over the runs of a host that stopped: every [`RECOVER_EVERY`] a server looks
//! for `running` runs it does not drive and tries to take each over
//! ([`AgentRunner::recover`](iris_runner::AgentRunner::recover)). The run store's
//! lease decides: while the host that drives a run is alive it renews the lease and
//! the attempt is refused (`RUN_BUSY`); once the lease lapsed (the host was killed) or
//! was given up (the host stopped, [`Server::run`](crate::Server::run)), exactly one
//! server gets it. The journal's in-doubt rule applies: a call the dead host started
//! and did not finish runs again only when its tool is read-only or idempotent, else
//! the run waits for a human (`in_doubt`). A subagent's child run is left to its
//! parent.

use std::sync::Arc;
use std::time::Duration;

use iris_runner::store::{RunQuery, RunStatus, RunStore};

use crate::host::Host;

/// How often a server looks for runs to take over.
pub const RECOVER_EVERY: Duration = Duration::from_secs(2);

/// Runs read per page of the look.
const PAGE: usize = 100;

/// Looks for runs to take over until the server stops.
pub(crate) async fn watch(host: Arc<Host>) {
    loop {
        tokio::select! {
            () = host.stopping.cancelled() => return,
            () = tokio::time::sleep(RECOVER_EVERY) => {}
        }
        sweep(&host).await;
    }
}

/// One look through the `running` runs.
async fn sweep(host: &Arc<Host>) {
    let mut after = None;
    loop {
        let query = RunQuery {
            status: Some(RunStatus::Running),
            agent_id: None,
            after,
            limit: PAGE,
        };
        let page = match host.store.list_page(&query).await {
            Ok(page) => page,
            Err(e) => {
                tracing::warn!(error = %e, "cannot list the running runs to take over");
                return;
            }
        };
        for run in &page.runs {
            if host.stopping.requested() {
                return;
            }
            if run.parent_run_id.is_none() {
                host.recover(&run.run_id, &run.agent_id).await;
            }
        }
        match page.next {
            Some(next) => after = Some(next),
            None => return,
        }
    }
}
