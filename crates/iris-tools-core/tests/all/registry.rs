//! Tests for the `registry` area.
