//! `read_file` (`file.read`): text by lines and characters, or an image.

use base64::Engine as _;
use iris_tools_core::{ContentBlock, ToolErrorInfo, ToolExecutionContext, ToolOutput};
use serde_json::{Value, json};

use crate::codes;
use crate::load::{as_text, load};
use crate::media::sniff_image;
use crate::read_state::Observation;
use crate::service::FileService;
use crate::text::{PageError, PageRequest, page};

/// The body of `read_file`: one page of `file_path` as `req` asks, or the whole image.
pub(super) fn read(
    service: &FileService,
    ctx: &ToolExecutionContext,
    file_path: &str,
    req: &PageRequest,
) -> Result<ToolOutput, ToolErrorInfo> {
    let config = service.config();
    let limit_bytes = config.max_text_bytes.max(config.max_image_bytes);
    let (target, loaded) = service.with_existing(ctx, file_path, |target| {
        let loaded = load(&target, limit_bytes)?;
        Ok((target, loaded))
    })?;
    let rel = target.rel.as_str();
    let bytes = &loaded.bytes;
    let state = service.read_state(ctx);
    let size = bytes.len() as u64;

    if let Some(mime) = sniff_image(bytes) {
        if size > config.max_image_bytes {
            return Err(crate::load::too_large(
                rel,
                size,
                config.max_image_bytes,
                "images must be smaller to be sent to the model",
            ));
        }
        state.record(target.abs.clone(), Observation::of(bytes, &loaded.meta));
        let data = base64::engine::general_purpose::STANDARD.encode(bytes);
        let mut result = ToolOutput::new(vec![
            ContentBlock::text(format!("Image `{rel}` ({mime}, {size} bytes).")),
            ContentBlock::image(mime, data),
        ]);
        result.data.insert("path".into(), rel.into());
        result.data.insert("kind".into(), "image".into());
        result.data.insert("mime_type".into(), mime.into());
        result.data.insert("size_bytes".into(), size.into());
        return Ok(result);
    }

    if size > config.max_text_bytes {
        return Err(crate::load::too_large(
            rel,
            size,
            config.max_text_bytes,
            "use grep_search to find the part you need",
        ));
    }
    let text = match as_text(bytes, rel) {
        Ok(t) => t,
        Err(e) => {
            // The model now knows the file exists and what it is; recording the
            // observation lets it replace the file with write_file deliberately.
            state.record(target.abs.clone(), Observation::of(bytes, &loaded.meta));
            return Err(e);
        }
    };
    let page = page(text, req).map_err(|e| out_of_range(rel, &e))?;
    state.record(target.abs.clone(), Observation::of(bytes, &loaded.meta));

    let mut content = Vec::with_capacity(2);
    if !page.body.is_empty() {
        content.push(ContentBlock::text(page.body.clone()));
    }
    if let Some(notice) = notice(&page, req) {
        content.push(ContentBlock::text(notice));
    }
    let (next_offset, next_column) = match page.next {
        Some((o, c)) => (json!(o), json!(c)),
        None => (Value::Null, Value::Null),
    };
    let mut result = ToolOutput::new(content);
    let data = &mut result.data;
    data.insert("path".into(), rel.into());
    data.insert("kind".into(), "text".into());
    data.insert("size_bytes".into(), size.into());
    data.insert("total_lines".into(), page.total_lines.into());
    data.insert("offset".into(), req.offset.into());
    data.insert("column".into(), req.column.into());
    data.insert("lines".into(), page.lines.into());
    data.insert("chars".into(), page.content_chars.into());
    data.insert("truncated".into(), page.budget_hit.into());
    data.insert("next_offset".into(), next_offset);
    data.insert("next_column".into(), next_column);
    Ok(result)
}

/// The model-facing note after a page: how to continue, or why it is empty.
fn notice(page: &crate::text::Page, req: &PageRequest) -> Option<String> {
    match page.next {
        Some((line, column)) if page.budget_hit && column > 0 => Some(format!(
            "[Stopped at the {}-character budget inside line {}; continue with offset={line}, column={column}.]",
            req.budget,
            line + 1
        )),
        Some((line, _)) if page.budget_hit => Some(format!(
            "[Stopped at the {}-character budget; continue with offset={line}.]",
            req.budget
        )),
        Some((line, column)) if page.lines == 0 => Some(format!(
            "[No lines requested; the file has {} lines. Read from offset={line}{}.]",
            page.total_lines,
            if column > 0 {
                format!(", column={column}")
            } else {
                String::new()
            }
        )),
        Some((line, _)) => Some(format!(
            "[Showing lines {}-{line} of {}; continue with offset={line}.]",
            req.offset + 1,
            page.total_lines
        )),
        None if page.body.is_empty() && page.total_lines == 0 => {
            Some("[The file is empty.]".into())
        }
        None if page.body.is_empty() => {
            Some(format!("[End of file: it has {} lines.]", page.total_lines))
        }
        None => None,
    }
}

fn out_of_range(rel: &str, e: &PageError) -> ToolErrorInfo {
    let message = match e {
        PageError::OffsetPastEnd {
            offset,
            total_lines,
        } => format!(
            "offset {offset} is past the end of `{rel}`, which has {total_lines} lines (offsets 0-{total_lines})"
        ),
        PageError::ColumnPastEnd {
            offset,
            column,
            line_chars,
        } => format!(
            "column {column} is past the end of line {} of `{rel}`, which has {line_chars} characters",
            offset + 1
        ),
    };
    ToolErrorInfo::new(codes::READ_OUT_OF_RANGE, message).with_detail("path", rel)
}
