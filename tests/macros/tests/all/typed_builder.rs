//! The runtime builder (the seed's `input_model`).
