//! Helpers shared by the test modules.

/// The symlink-filled workspace of the path-confinement tests (iris-fs's and the
/// permission policy's).
#[cfg(unix)]
pub(crate) use iris_test_support::symlinks::symlink_workspace as workspace_fixture;
