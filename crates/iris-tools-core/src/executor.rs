//! [`ToolExecutor`]: the one path every tool call travels.
