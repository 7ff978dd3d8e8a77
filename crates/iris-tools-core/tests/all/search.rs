//! Tests for the `search` area.
