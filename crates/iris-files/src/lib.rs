#![doc = include_str!("../README.md")]

pub mod codes;
mod config;
mod error;
mod load;
mod media;
mod params;
mod preview;
mod read_state;
mod rules;
mod service;
mod text;
mod tools;
mod walk;

pub use config::{
    DEFAULT_GREP_LINE_CHARS, DEFAULT_GREP_MAX_LINE_BYTES, DEFAULT_MAX_IMAGE_BYTES,
    DEFAULT_MAX_PUBLISH_BYTES, DEFAULT_MAX_TEXT_BYTES, DEFAULT_READ_CHAR_BUDGET, DEFAULT_SKIP_DIRS,
    FileToolsConfig, MIN_GREP_LINE_CHARS, MIN_GREP_MAX_LINE_BYTES, MIN_READ_CHAR_BUDGET,
};
pub use error::Error;
pub use preview::{MAX_PREVIEW_BYTES, change_diff};
pub use read_state::{ContentHash, Observation, ReadState};
pub use service::{FileService, PUBLISHED_DIR};
pub use tools::{
    CATALOG, DEFAULT_MAX_RESULTS, EditFileTool, GrepSearchTool, ListFilesTool, MAX_GLOB_CHARS,
    MAX_READ_LIMIT, MAX_RESULTS_LIMIT, MakeFileTool, PublishArtifactTool, ReadFileTool,
    WriteFileTool, builtin_tool, builtin_tools, builtin_tools_with,
};
