//! Typed tools: the seed's `input_model` (builder) and `schema_for_input`.
