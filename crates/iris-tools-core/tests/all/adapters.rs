//! Tests for the `adapters` area.
