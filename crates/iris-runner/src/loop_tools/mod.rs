//! The run loop's own tools, one file each; see [`crate::loop_tool`].

pub(crate) mod ask_question;
pub(crate) mod context_read;
pub(crate) mod context_search;
pub(crate) mod get_goal;
pub(crate) mod report_goal;
pub(crate) mod store_secret;
pub(crate) mod subagent;

/// `Err` with the message when `text` is blank.
pub(crate) fn not_blank(field: &str, text: &str) -> Result<(), String> {
    if text.trim().is_empty() {
        Err(format!("`{field}` must be a non-empty string"))
    } else {
        Ok(())
    }
}
