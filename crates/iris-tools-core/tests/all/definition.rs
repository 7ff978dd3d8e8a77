//! Tests for the `definition` area.
