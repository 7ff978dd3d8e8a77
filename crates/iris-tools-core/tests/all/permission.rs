//! Tests for the `permission` area.
