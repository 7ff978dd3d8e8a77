//! Compile tests: what must build and what must fail, with the exact messages.
