//! Tests for the `artifact` area.
