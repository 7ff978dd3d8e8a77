//! What a durable store knows it persisted of each run it drives, so that a save
//! appends a turn's new messages instead of writing the whole history again.
//!
//! The SQL stores keep a run's messages one row each, `(run_id, generation, seq)`, and
//! the run's row says how many there are (`history_len`) and which generation is
//! current (`history_generation`). A save is one of two writes:
//!
//! * **append** — the history this process last persisted is a prefix of the one it
//!   saves *by identity* ([`History::is_prefix_of`]: the same shared messages, which
//!   are never changed in place), and the row still says the length and generation
//!   this process wrote or read: only the messages after that prefix are inserted,
//!   and the row's length moves on. The row check makes it a compare-and-set, so a
//!   history another process wrote meanwhile is never appended to.
//! * **rewrite** — anything else (the first save after a resume in this process, a
//!   history that was changed rather than grown, a row another process moved on): the
//!   whole history is written under the next generation and the older generations'
//!   rows are deleted, in the same transaction.
//!
//! The cache holds only the runs whose lease this store took in this process (from
//! [`acquire`](super::RunStore::acquire) or [`create`](super::RunStore::create) to
//! [`release`](super::RunStore::release) or a lost lease); their messages are shared
//! with the run's own history, so it costs no copy.

use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard, PoisonError};

use iris_providers::chat::History;

/// What a run's row and message rows hold, as this process last wrote or read them.
#[derive(Debug, Clone)]
pub(crate) struct Persisted {
    /// The row's `history_generation`.
    pub(crate) generation: i64,
    /// The history those rows hold (shared with the run's).
    pub(crate) history: History,
}

/// How a save writes the history.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum HistoryWrite {
    /// Insert the messages from `from` on, if the row still holds `from` messages of
    /// `generation`.
    Append {
        /// The messages already persisted.
        from: usize,
        /// The generation they belong to.
        generation: i64,
    },
    /// Write every message under a new generation.
    Rewrite,
}

/// The runs this store drives, with what it knows it persisted of each.
#[derive(Debug, Default)]
pub(crate) struct PersistedRuns {
    /// A run is present while this store holds its lease; `None` until its persisted
    /// history is known.
    runs: Mutex<HashMap<String, Option<Persisted>>>,
}

impl PersistedRuns {
    fn lock(&self) -> MutexGuard<'_, HashMap<String, Option<Persisted>>> {
        // Every operation replaces whole entries, so a poisoned lock holds no half
        // update.
        self.runs.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// This store took the run's lease (what it persisted stays known on a renewal by
    /// `acquire`).
    pub(crate) fn held(&self, run_id: &str) {
        self.lock().entry(run_id.to_owned()).or_insert(None);
    }

    /// The run is not driven from here any more (released, or its lease lost).
    pub(crate) fn forget(&self, run_id: &str) {
        self.lock().remove(run_id);
    }

    /// The rows now hold `persisted` — recorded only for a run this store drives (a
    /// `load` by a process that merely shows the run keeps nothing).
    pub(crate) fn wrote(&self, run_id: &str, persisted: Persisted) {
        if let Some(entry) = self.lock().get_mut(run_id) {
            *entry = Some(persisted);
        }
    }

    /// Like [`wrote`](Self::wrote), for the run a `create` just inserted.
    pub(crate) fn created(&self, run_id: &str, persisted: Persisted) {
        self.lock().insert(run_id.to_owned(), Some(persisted));
    }

    /// How to save `history` of `run_id`.
    pub(crate) fn plan(&self, run_id: &str, history: &History) -> HistoryWrite {
        match self.lock().get(run_id) {
            Some(Some(p)) if p.history.is_prefix_of(history) => HistoryWrite::Append {
                from: p.history.len(),
                generation: p.generation,
            },
            _ => HistoryWrite::Rewrite,
        }
    }

    /// The save failed in a way that leaves the rows unknown (a database error):
    /// the next save rewrites.
    pub(crate) fn unknown(&self, run_id: &str) {
        if let Some(entry) = self.lock().get_mut(run_id) {
            *entry = None;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use iris_providers::chat::Message;

    #[test]
    fn a_grown_history_appends_and_anything_else_rewrites() {
        let runs = PersistedRuns::default();
        let mut history: History = vec![Message::user("a")].into();
        // Not driven here: nothing is known.
        assert_eq!(runs.plan("r", &history), HistoryWrite::Rewrite);
        runs.wrote(
            "r",
            Persisted {
                generation: 1,
                history: history.clone(),
            },
        );
        assert_eq!(runs.plan("r", &history), HistoryWrite::Rewrite);

        runs.held("r");
        assert_eq!(runs.plan("r", &history), HistoryWrite::Rewrite);
        runs.wrote(
            "r",
            Persisted {
                generation: 1,
                history: history.clone(),
            },
        );
        history.push(Message::assistant("b"));
        assert_eq!(
            runs.plan("r", &history),
            HistoryWrite::Append {
                from: 1,
                generation: 1
            }
        );
        // A renewal keeps what is known.
        runs.held("r");
        assert_eq!(
            runs.plan("r", &history),
            HistoryWrite::Append {
                from: 1,
                generation: 1
            }
        );
        // Changed, not grown: the same contents in a new message are a rewrite.
        let mut changed = history.clone();
        changed.set(0, Message::user("a"));
        assert_eq!(runs.plan("r", &changed), HistoryWrite::Rewrite);
        runs.unknown("r");
        assert_eq!(runs.plan("r", &history), HistoryWrite::Rewrite);
        runs.created(
            "r",
            Persisted {
                generation: 0,
                history: history.clone(),
            },
        );
        runs.forget("r");
        assert_eq!(runs.plan("r", &history), HistoryWrite::Rewrite);
    }
}
