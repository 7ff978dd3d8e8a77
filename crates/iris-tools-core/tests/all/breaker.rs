//! Tests for the `breaker` area.
