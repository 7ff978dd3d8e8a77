//! Tests for the `executor` area.
