//! [`SymlinkWorkspace`]: a workspace full of symlinks (inside, escaping, dangling,
//! looping, non-UTF-8) for path-confinement tests, built by [`symlink_workspace`]. Unix
//! only.
//!
//! ```
//! let fx = iris_test_support::symlinks::symlink_workspace();
//! assert!(fx.root.join("file.txt").is_file());
//! assert_eq!(std::fs::read_link(fx.root.join("link_etc")).unwrap(), std::path::Path::new("/etc"));
//! ```

/// A temporary directory holding a workspace root `ws`, a sibling `outside` and a
/// symlink `ws_link -> ws`, with files, directories and symlinks (inside, escaping,
/// dangling, looping, non-UTF-8) for path-confinement tests. Built by
/// [`symlink_workspace`]; removed on drop.
///
/// ```text
/// tmp/
///   outside/secret.txt
///   ws_link -> ws
///   ws/
///     file.txt   caf\xe9.txt
///     dir/nested.txt  dir/sub/  dir/up -> ..  dir/dangling_rel_out -> ../../outside/new.txt
///     dir/sub/link_in -> ../../chain_in1
///     link_dir -> dir           link_abs_in -> <tmp>/ws/dir    link_file -> file.txt
///     link_parent -> ..         link_outside_dir -> ../outside  link_etc -> /etc
///     chain1 -> chain2 -> chain3 -> ../outside     chain_in1 -> chain_in2 -> dir
///     dangling_in -> dir/new.txt    dangling_out -> ../outside/new.txt
///     dangling_abs_out -> <tmp>/outside/missing_dir/new.txt
///     dangling_chain -> dangling_out    loop_a -> loop_b -> loop_a
///     bad\xff_link -> ../outside
/// ```
#[derive(Debug)]
pub struct SymlinkWorkspace {
    /// Keeps the directory alive.
    _dir: tempfile::TempDir,
    /// The temporary directory, as the OS handed it out (not canonicalized).
    pub tmp: std::path::PathBuf,
    /// `tmp/ws`, the workspace root.
    pub root: std::path::PathBuf,
}

/// Builds a [`SymlinkWorkspace`]. Setup failures panic: a broken fixture must stop
/// the test rather than silently drop cases.
pub fn symlink_workspace() -> SymlinkWorkspace {
    use std::ffi::OsStr;
    use std::fs;
    use std::os::unix::ffi::OsStrExt;
    use std::os::unix::fs::symlink;

    let dir = tempfile::tempdir().unwrap();
    let tmp = dir.path().to_path_buf();
    let root = tmp.join("ws");
    fs::create_dir_all(tmp.join("outside")).unwrap();
    fs::write(tmp.join("outside/secret.txt"), "secret").unwrap();
    fs::create_dir_all(root.join("dir/sub")).unwrap();
    fs::write(root.join("file.txt"), "file").unwrap();
    fs::write(root.join("dir/nested.txt"), "nested").unwrap();
    fs::write(root.join(OsStr::from_bytes(b"caf\xe9.txt")), "latin-1 name").unwrap();
    symlink("ws", tmp.join("ws_link")).unwrap();
    let links: [(&std::path::Path, &[u8]); 21] = [
        ("..".as_ref(), b"dir/up"),
        ("../../outside/new.txt".as_ref(), b"dir/dangling_rel_out"),
        ("dir".as_ref(), b"link_dir"),
        (&tmp.join("ws/dir"), b"link_abs_in"),
        ("file.txt".as_ref(), b"link_file"),
        ("..".as_ref(), b"link_parent"),
        ("../outside".as_ref(), b"link_outside_dir"),
        ("/etc".as_ref(), b"link_etc"),
        ("chain2".as_ref(), b"chain1"),
        ("chain3".as_ref(), b"chain2"),
        ("../outside".as_ref(), b"chain3"),
        ("chain_in2".as_ref(), b"chain_in1"),
        ("dir".as_ref(), b"chain_in2"),
        ("dir/new.txt".as_ref(), b"dangling_in"),
        ("../outside/new.txt".as_ref(), b"dangling_out"),
        (
            &tmp.join("outside/missing_dir/new.txt"),
            b"dangling_abs_out",
        ),
        ("dangling_out".as_ref(), b"dangling_chain"),
        ("loop_b".as_ref(), b"loop_a"),
        ("loop_a".as_ref(), b"loop_b"),
        ("../outside".as_ref(), b"bad\xff_link"),
        ("../../chain_in1".as_ref(), b"dir/sub/link_in"),
    ];
    for (target, at) in links {
        symlink(target, root.join(OsStr::from_bytes(at))).unwrap();
    }
    SymlinkWorkspace {
        _dir: dir,
        tmp,
        root,
    }
}
