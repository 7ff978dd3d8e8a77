//! `write_file` (`file.write`): create a file or replace its whole content.

use std::ffi::OsStr;
use std::path::Path;
use std::time::SystemTime;

use iris_fs::atomic::{WriteMode, write_atomic_in};
use iris_fs::workspace::WorkspaceDir;
use iris_tools_core::{ToolErrorInfo, ToolExecutionContext, ToolOutput};

use super::freshness::{created_meanwhile, require_fresh_file, still_unchanged};
use crate::codes;
use crate::read_state::{ContentHash, Observation};
use crate::service::{Fault, FileService, Resolved, Target, access_fault};
use crate::text::count_lines;

/// Refuses writes into the published-copies store (a published copy must stay what it
/// was when published) and to the workspace policy's protected paths (`.iris`, `.git`,
/// the agent YAML and the files it references: a model must not rewrite its own
/// policy).
pub(super) fn refuse_protected(
    service: &FileService,
    target: &Resolved,
) -> Result<(), ToolErrorInfo> {
    let rel = target.rel.as_str();
    let published = crate::service::PUBLISHED_DIR;
    if rel == published || rel.starts_with(&format!("{published}/")) {
        return Err(ToolErrorInfo::new(
            codes::PROTECTED_PATH,
            format!("`{rel}` is a published copy and cannot be changed; write to the original file instead"),
        )
        .with_detail("path", rel));
    }
    let policy = &service.config().workspace_policy;
    if let Some(protected) = policy.protects(&target.abs, &target.root) {
        return Err(ToolErrorInfo::new(
            codes::PROTECTED_PATH,
            format!(
                "`{rel}` is protected (`{}`): tools may read it but not change it",
                protected.to_string_lossy().escape_debug()
            ),
        )
        .with_detail("path", rel));
    }
    Ok(())
}

/// The body of `write_file`: creates `file_path` or replaces it with `content`.
///
/// Every step goes through held directory handles: the parent is walked (or created
/// with `mkdirat`) from the workspace root without following a symlink, and the file is
/// written as a temporary file in that held parent, then renamed or linked into place
/// relative to it. When the tree changed since the resolution, the path is resolved
/// again.
pub(super) fn write(
    service: &FileService,
    ctx: &ToolExecutionContext,
    file_path: &str,
    content: &str,
) -> Result<ToolOutput, ToolErrorInfo> {
    let content = content.as_bytes();
    let (target, created, modified) =
        service.with_target(ctx, file_path, |target| match target {
            Target::Existing(target) => {
                refuse_protected(service, &target)?;
                let (dir, name) = target.parent()?;
                let (file, _) = dir
                    .open_file(Path::new(&name))
                    .map_err(|e| access_fault(&target.rel, e))?;
                let state = service.read_state(ctx);
                let _lock = service.lock_path(&target.abs);
                let checked = require_fresh_file(&state, &target.abs, &target.rel, file)?;
                let verify = || still_unchanged(&dir, &name, &target.rel, checked);
                write_atomic_in(
                    &dir,
                    &name,
                    &target.rel,
                    content,
                    WriteMode::Replace { verify: &verify },
                )?;
                let modified = modified_in(&dir, &name);
                Ok((target, false, modified))
            }
            Target::Missing {
                resolved,
                parent_ok,
            } => {
                refuse_protected(service, &resolved)?;
                if !parent_ok {
                    return Err(Fault::Fail(
                        ToolErrorInfo::new(
                            codes::NOT_A_DIRECTORY,
                            format!(
                                "cannot create `{}`: a part of its parent path is a file",
                                resolved.rel
                            ),
                        )
                        .with_detail("path", resolved.rel),
                    ));
                }
                let (dir, name) = resolved.create_parent()?;
                let _lock = service.lock_path(&resolved.abs);
                let exists = || created_meanwhile(&resolved.rel);
                write_atomic_in(
                    &dir,
                    &name,
                    &resolved.rel,
                    content,
                    WriteMode::CreateNew { exists: &exists },
                )?;
                let modified = modified_in(&dir, &name);
                Ok((resolved, true, modified))
            }
        })?;
    let hash = record_written(service, ctx, &target, content, modified);
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

/// The modification time of the entry `name` of `dir`, read through the handle.
pub(super) fn modified_in(dir: &WorkspaceDir, name: &OsStr) -> Option<SystemTime> {
    dir.open_file(Path::new(name))
        .ok()
        .and_then(|(_, meta)| meta.modified().ok())
}

/// After our own write the model knows the content exactly, so the written bytes
/// become this session's observation (a later edit needs no extra read). Returns
/// the content hash.
pub(super) fn record_written(
    service: &FileService,
    ctx: &ToolExecutionContext,
    target: &Resolved,
    content: &[u8],
    modified: Option<SystemTime>,
) -> ContentHash {
    let observation = Observation {
        content_hash: ContentHash::of(content),
        size: content.len() as u64,
        modified,
    };
    let hash = observation.content_hash;
    service
        .read_state(ctx)
        .record(target.abs.clone(), observation);
    hash
}
