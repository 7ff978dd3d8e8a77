//! `write_file` (`file.write`): create a file or replace its whole content.

use iris_executor::atomic::{WriteMode, write_atomic};
use iris_tools_core::{ToolErrorInfo, ToolExecutionContext, ToolOutput, codes as core_codes};

use super::freshness::{created_meanwhile, require_fresh_file, still_unchanged};
use crate::codes;
use crate::read_state::{ContentHash, Observation};
use crate::service::{FileService, Resolved, Target};
use crate::text::count_lines;

/// Refuses writes into the published-copies store: a published copy must stay what
/// it was when published.
pub(super) fn refuse_protected(target: &Resolved) -> Result<(), ToolErrorInfo> {
    let rel = target.rel.as_str();
    let published = crate::service::PUBLISHED_DIR;
    if rel == published || rel.starts_with(&format!("{published}/")) {
        return Err(ToolErrorInfo::new(
            codes::PROTECTED_PATH,
            format!("`{rel}` is a published copy and cannot be changed; write to the original file instead"),
        )
        .with_detail("path", rel));
    }
    Ok(())
}

/// The body of `write_file`: creates `file_path` or replaces it with `content`.
pub(super) fn write(
    service: &FileService,
    ctx: &ToolExecutionContext,
    file_path: &str,
    content: &str,
) -> Result<ToolOutput, ToolErrorInfo> {
    let content = content.as_bytes();
    let (target, created) = match service.resolve(ctx, file_path)? {
        Target::Existing(target) => {
            refuse_protected(&target)?;
            crate::load::regular_file(&target.abs, &target.rel)?;
            let state = service.read_state(ctx);
            let _lock = service.lock_path(&target.abs);
            let checked = require_fresh_file(&state, &target.abs, &target.rel)?;
            let verify = || still_unchanged(&target.abs, &target.rel, checked);
            write_atomic(
                &target.abs,
                &target.rel,
                content,
                WriteMode::Replace { verify: &verify },
            )?;
            (target, false)
        }
        Target::Missing {
            resolved,
            parent_ok,
        } => {
            refuse_protected(&resolved)?;
            if !parent_ok {
                return Err(ToolErrorInfo::new(
                    codes::NOT_A_DIRECTORY,
                    format!(
                        "cannot create `{}`: a part of its parent path is a file",
                        resolved.rel
                    ),
                )
                .with_detail("path", resolved.rel));
            }
            if let Some(parent) = resolved.abs.parent() {
                std::fs::create_dir_all(parent).map_err(|e| {
                    ToolErrorInfo::new(
                        core_codes::IO_ERROR,
                        format!("cannot create the directories of `{}`: {e}", resolved.rel),
                    )
                    .with_detail("path", resolved.rel.clone())
                })?;
            }
            let _lock = service.lock_path(&resolved.abs);
            let exists = || created_meanwhile(&resolved.rel);
            write_atomic(
                &resolved.abs,
                &resolved.rel,
                content,
                WriteMode::CreateNew { exists: &exists },
            )?;
            (resolved, true)
        }
    };
    let hash = record_written(service, ctx, &target, content);
    let lines = std::str::from_utf8(content).map_or(0, count_lines);
    let verb = if created { "Created" } else { "Wrote" };
    Ok(ToolOutput::text(format!(
        "{verb} `{}` ({} bytes, {lines} lines).",
        target.rel,
        content.len()
    ))
    .with_data("path", target.rel.clone())
    .with_data("created", created)
    .with_data("size_bytes", content.len() as u64)
    .with_data("lines", lines)
    .with_data("sha256", hash.to_string()))
}

/// After our own write the model knows the content exactly, so the written bytes
/// become this session's observation (a later edit needs no extra read). Returns
/// the content hash.
pub(super) fn record_written(
    service: &FileService,
    ctx: &ToolExecutionContext,
    target: &Resolved,
    content: &[u8],
) -> ContentHash {
    let observation = Observation {
        content_hash: ContentHash::of(content),
        size: content.len() as u64,
        modified: target.abs.metadata().and_then(|m| m.modified()).ok(),
    };
    let hash = observation.content_hash;
    service
        .read_state(ctx)
        .record(target.abs.clone(), observation);
    hash
}
