//! SIGINT, SIGTERM and SIGHUP: caught once at start, so a signal cancels the running
//! call and closes the tool environment (stopping every process the call, a command
//! hook or an MCP server started) before `iris` exits with the conventional
//! `128 + signal` code, instead of dying and leaving those process groups running.

use std::io;

use tokio::signal::unix::{Signal, SignalKind, signal};

/// A caught signal.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Caught {
    /// SIGINT (Ctrl-C): exit 130.
    Interrupt,
    /// SIGTERM: exit 143.
    Terminate,
    /// SIGHUP (the terminal went away): exit 129.
    Hangup,
}

impl Caught {
    /// `SIGINT`, `SIGTERM` or `SIGHUP`.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Caught::Interrupt => "SIGINT",
            Caught::Terminate => "SIGTERM",
            Caught::Hangup => "SIGHUP",
        }
    }

    /// The shell's convention for a process ended by this signal: 128 + its number.
    pub(crate) fn exit_code(self) -> u8 {
        match self {
            Caught::Interrupt => 130,
            Caught::Terminate => 143,
            Caught::Hangup => 129,
        }
    }
}

/// The three handlers, installed for the whole run.
#[derive(Debug)]
pub(crate) struct Signals {
    interrupt: Signal,
    terminate: Signal,
    hangup: Signal,
}

impl Signals {
    /// Installs the handlers (inside the runtime). From now on these signals no longer
    /// end the process by themselves: [`Signals::recv`] must be awaited wherever the
    /// process waits.
    pub(crate) fn install() -> io::Result<Self> {
        Ok(Self {
            interrupt: signal(SignalKind::interrupt())?,
            terminate: signal(SignalKind::terminate())?,
            hangup: signal(SignalKind::hangup())?,
        })
    }

    /// The next signal.
    pub(crate) async fn recv(&mut self) -> Caught {
        tokio::select! {
            _ = self.interrupt.recv() => Caught::Interrupt,
            _ = self.terminate.recv() => Caught::Terminate,
            _ = self.hangup.recv() => Caught::Hangup,
        }
    }
}
