//! Tests for the `workspace` area.
