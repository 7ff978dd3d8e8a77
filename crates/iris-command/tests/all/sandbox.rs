//! The command sandbox, black-box: escape attempts run as real commands through the
//! service and the real helper, each checked by what it printed and by what is on
//! disk afterwards; then what must still work.
//!
//! Every attempt prints `ESCAPED` only when the forbidden thing succeeded; after each
//! one the secrets must still be unread, the outside folder empty and the protected
//! files unchanged.

use std::net::{Ipv4Addr, TcpListener};
use std::os::linux::net::SocketAddrExt as _;
use std::os::unix::net::{SocketAddr, UnixListener};
use std::path::{Path, PathBuf};
use std::time::Duration;

use iris_command::{
    CommandConfig, CommandOutcome, CommandRequest, CommandScope, CommandService, NetworkAccess,
    SandboxPolicy,
};

const SECRET: &str = "s3cret-value";
const YAML: &str = "name: agent\n";
const HOOK: &str = "#!/bin/sh\nexit 0\n";

/// A workspace with protected files, secrets beside it and an empty outside folder.
struct Lab {
    _dir: tempfile::TempDir,
    root: PathBuf,
    ws: PathBuf,
    service: CommandService,
}

impl Lab {
    async fn new(network: NetworkAccess) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        let ws = root.join("ws");
        std::fs::create_dir_all(ws.join("hooks")).unwrap();
        std::fs::create_dir_all(ws.join(".iris/runs")).unwrap();
        std::fs::create_dir_all(root.join("outside")).unwrap();
        std::fs::create_dir_all(root.join("secrets")).unwrap();
        std::fs::write(root.join("secrets/key"), SECRET).unwrap();
        std::fs::write(root.join("secret.txt"), SECRET).unwrap();
        std::fs::write(ws.join("agent.yaml"), YAML).unwrap();
        std::fs::write(ws.join("hooks/no-rm.sh"), HOOK).unwrap();
        let git = std::process::Command::new("git")
            .args(["init", "-q", "."])
            .current_dir(&ws)
            .status()
            .unwrap();
        assert!(git.success());
        std::fs::write(ws.join(".git/hooks/pre-commit"), HOOK).unwrap();
        let policy = SandboxPolicy {
            deny_read: vec![root.join("secrets"), root.join("secret.txt")],
            network,
            ..SandboxPolicy::default()
        };
        let service = CommandService::new(CommandConfig::native().with_sandbox(policy), &ws)
            .unwrap()
            .with_protected_paths(["agent.yaml", "hooks/no-rm.sh"])
            .with_egress_loopback_override("allowed.test", Ipv4Addr::LOCALHOST.into())
            .with_egress_loopback_override("other.test", Ipv4Addr::LOCALHOST.into());
        service.prepare().await.unwrap_or_else(|e| {
            panic!("{e}: the sandbox tests need Landlock ABI 6, user namespaces and the iris-sandbox helper (cargo build -p iris-sandbox)")
        });
        Self {
            _dir: dir,
            root,
            ws,
            service,
        }
    }

    async fn run(&self, cwd: &str, command: &str) -> CommandOutcome {
        let command = command
            .replace("$ROOT", &self.root.display().to_string())
            .replace("$HOST", &std::process::id().to_string());
        self.service
            .execute(
                &CommandScope::new("run-sandbox", "s"),
                CommandRequest::shell("call", command, cwd).timeout_seconds(60.0),
            )
            .await
            .unwrap()
    }

    /// One escape attempt: it must not print `ESCAPED` or a secret, and the disk must
    /// show nothing happened.
    async fn check(&self, name: &str, cwd: &str, command: &str) {
        let out = self.run(cwd, command).await;
        let text = format!("{}{}", out.stdout, out.stderr);
        assert!(
            !text.contains("ESCAPED") && !text.contains(SECRET),
            "{name}: escaped\n{out:?}"
        );
        assert!(out.sandbox.is_some(), "{name}: not sandboxed");
        self.intact(name);
    }

    /// What every attempt leaves alone.
    fn intact(&self, name: &str) {
        let outside: Vec<_> = std::fs::read_dir(self.root.join("outside"))
            .unwrap()
            .collect();
        assert!(outside.is_empty(), "{name}: wrote outside: {outside:?}");
        let read = |p: &Path| std::fs::read_to_string(p).unwrap_or_default();
        assert_eq!(read(&self.root.join("secrets/key")), SECRET, "{name}");
        assert_eq!(
            read(&self.ws.join("agent.yaml")),
            YAML,
            "{name}: agent.yaml"
        );
        assert_eq!(read(&self.ws.join("hooks/no-rm.sh")), HOOK, "{name}: hook");
        assert_eq!(
            read(&self.ws.join(".git/hooks/pre-commit")),
            HOOK,
            "{name}: pre-commit"
        );
        assert!(!self.ws.join(".iris/planted").exists(), "{name}: .iris");
        assert!(
            !Path::new("/dev/shm/iris-sandbox-escape").exists(),
            "{name}: /dev/shm"
        );
        assert!(
            !Path::new("/tmp/iris-sandbox-escape").exists(),
            "{name}: /tmp"
        );
    }

    /// Something that must still work: exit 0 and `OK` on stdout.
    async fn allowed(&self, name: &str, command: &str) {
        let out = self.run(".", command).await;
        assert!(
            out.success() && out.stdout.contains("OK"),
            "{name}: refused\n{out:?}"
        );
    }
}

/// `python3 -c` with `$…` placeholders filled in later.
fn py(code: &str) -> String {
    format!("python3 -c '{code}'")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn escapes_fail_and_work_still_works() {
    let lab = Lab::new(NetworkAccess::Off).await;
    let tcp = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).unwrap();
    tcp.set_nonblocking(true).unwrap();
    let tcp_port = tcp.local_addr().unwrap().port();
    let unix_path = lab.root.join("host.sock");
    let unix = UnixListener::bind(&unix_path).unwrap();
    unix.set_nonblocking(true).unwrap();
    let abstract_name = format!("iris-sandbox-test-{}", std::process::id());
    let abstract_listener =
        UnixListener::bind_addr(&SocketAddr::from_abstract_name(&abstract_name).unwrap()).unwrap();
    abstract_listener.set_nonblocking(true).unwrap();

    let cases: Vec<(&str, &str, String)> = vec![
        // Reads of deny_read paths.
        ("read a masked directory", ".", "cat $ROOT/secrets/key".into()),
        ("read a masked file", ".", "cat $ROOT/secret.txt".into()),
        ("list a masked directory", ".", "ls $ROOT/secrets | grep -q key && echo ESCAPED".into()),
        ("read via /proc/self/root", ".", "cat /proc/self/root$ROOT/secrets/key".into()),
        ("read via the host's /proc root", ".", "cat /proc/$HOST/root$ROOT/secrets/key".into()),
        ("read via pid 1's root", ".", "cat /proc/1/root$ROOT/secret.txt".into()),
        ("read via a symlink made here", ".", "ln -s $ROOT/secrets/key l && cat l".into()),
        ("read via a hard link", ".", "ln $ROOT/secret.txt h; cat h".into()),
        ("copy a secret in", ".", "cp $ROOT/secrets/key c; cat c".into()),
        ("read from inside the directory", ".", "cd $ROOT/secrets && cat key".into()),
        ("read with python", ".", py("print(open(\"$ROOT/secret.txt\").read())")),
        // Writes outside the workspace.
        ("write outside", ".", "echo x > $ROOT/outside/a && echo ESCAPED".into()),
        ("write through ..", ".", "echo x > ../outside/a && echo ESCAPED".into()),
        ("mkdir -p outside", ".", "mkdir -p $ROOT/outside/deep/dir && echo ESCAPED".into()),
        ("rename across", ".", "echo x > m && mv m $ROOT/outside/m && echo ESCAPED".into()),
        ("write /dev/shm", ".", "echo x > /dev/shm/iris-sandbox-escape && echo ESCAPED".into()),
        ("write /tmp", ".", "echo x > /tmp/iris-sandbox-escape && echo ESCAPED".into()),
        ("write through a symlink out", ".", "ln -s $ROOT/outside/s s && echo x > s && echo ESCAPED".into()),
        (
            "symlink swap race",
            ".",
            "mkdir d; (for i in $(seq 300); do rm -rf d; ln -s $ROOT/outside d; rm -f d; mkdir d; done) & \
             for i in $(seq 300); do echo x > d/f$i 2>/dev/null; done; wait; true"
                .into(),
        ),
        ("write outside with python", ".", py("open(\"$ROOT/outside/p\", \"w\").write(\"x\"); print(\"ESCAPED\")")),
        ("write the home directory", ".", "echo x > $HOME/.iris-sandbox-escape && echo ESCAPED".into()),
        // Rewrites of protected paths.
        ("rewrite the agent YAML", ".", "echo evil > agent.yaml && echo ESCAPED".into()),
        ("append to the hook script", ".", "echo evil >> hooks/no-rm.sh && echo ESCAPED".into()),
        ("write a git hook", ".", "echo evil > .git/hooks/pre-commit && echo ESCAPED".into()),
        ("write git config", ".", "echo evil >> .git/config && echo ESCAPED".into()),
        ("plant in .iris", ".", "echo x > .iris/planted && echo ESCAPED".into()),
        ("remove the agent YAML", ".", "rm -f agent.yaml; test -e agent.yaml || echo ESCAPED".into()),
        ("rename the agent YAML", ".", "mv agent.yaml a2 && echo ESCAPED".into()),
        (
            "swap the hook's directory",
            ".",
            "mv hooks hooks2 && mkdir hooks && echo evil > hooks/no-rm.sh && echo ESCAPED".into(),
        ),
        ("hard link a protected file", ".", "ln agent.yaml hl && echo evil >> hl && echo ESCAPED".into()),
        (
            "replace by rename",
            ".",
            py("import os; open(\"t\", \"w\").write(\"evil\"); os.replace(\"t\", \"agent.yaml\"); print(\"ESCAPED\")"),
        ),
        ("write with the cwd inside .git", ".git", "echo evil > hooks/pre-commit && echo ESCAPED".into()),
        // Network.
        (
            "TCP to loopback",
            ".",
            py(&format!("import socket; socket.create_connection((\"127.0.0.1\", {tcp_port}), 2); print(\"ESCAPED\")")),
        ),
        ("curl to loopback", ".", format!("curl -s -m 2 http://127.0.0.1:{tcp_port}/ && echo ESCAPED")),
        (
            "UDP DNS",
            ".",
            py("import socket; s=socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.sendto(b\"q\", (\"127.0.0.1\", 53)); print(\"ESCAPED\")"),
        ),
        ("raw socket", ".", py("import socket; socket.socket(socket.AF_INET, socket.SOCK_RAW, 1); print(\"ESCAPED\")")),
        ("packet socket", ".", py("import socket; socket.socket(socket.AF_PACKET, socket.SOCK_RAW); print(\"ESCAPED\")")),
        (
            "IPv6 TCP",
            ".",
            py(&format!("import socket; socket.create_connection((\"::1\", {tcp_port}), 2); print(\"ESCAPED\")")),
        ),
        (
            "a host Unix socket",
            ".",
            py(&format!("import socket; s=socket.socket(socket.AF_UNIX); s.connect(\"{}\"); print(\"ESCAPED\")", unix_path.display())),
        ),
        (
            "the Docker socket",
            ".",
            py("import socket; s=socket.socket(socket.AF_UNIX); s.connect(\"/var/run/docker.sock\"); print(\"ESCAPED\")"),
        ),
        (
            "an abstract Unix socket",
            ".",
            py(&format!("import socket; s=socket.socket(socket.AF_UNIX); s.connect(\"\\0{abstract_name}\"); print(\"ESCAPED\")")),
        ),
        // Process tricks.
        (
            "ptrace the host",
            ".",
            py("import ctypes; r=ctypes.CDLL(None).ptrace(16, $HOST, 0, 0); print(\"ESCAPED\" if r == 0 else \"refused\")"),
        ),
        ("read the host's memory", ".", py("open(\"/proc/$HOST/mem\", \"rb\"); print(\"ESCAPED\")")),
        ("read the host's environment", ".", "cat /proc/$HOST/environ && echo ESCAPED".into()),
        ("signal the host", ".", "kill -0 $HOST && echo ESCAPED".into()),
        ("unshare a user namespace", ".", "unshare -r true && echo ESCAPED".into()),
        ("unshare a network namespace", ".", "unshare -n true && echo ESCAPED".into()),
        ("enter pid 1's namespaces", ".", "nsenter -t 1 -m true && echo ESCAPED".into()),
        ("personality without ASLR", ".", "setarch -R true && echo ESCAPED".into()),
        ("mount a tmpfs", ".", "mkdir -p mnt && mount -t tmpfs none mnt && echo ESCAPED".into()),
        ("unmount a protected path", ".", "umount agent.yaml && echo ESCAPED".into()),
        ("chroot", ".", "chroot . /bin/true && echo ESCAPED".into()),
        (
            "drop no_new_privs",
            ".",
            py("import ctypes; ctypes.CDLL(None).prctl(38, 0, 0, 0, 0); print(\"ESCAPED\" if \"NoNewPrivs:\\t0\" in open(\"/proc/self/status\").read() else \"kept\")"),
        ),
        (
            "a setsid daemon writes later",
            ".",
            "setsid sh -c 'sleep 1; echo x > $ROOT/outside/daemon' > /dev/null 2>&1 & true".into(),
        ),
    ];
    assert!(cases.len() >= 40, "{} cases", cases.len());
    for (name, cwd, command) in &cases {
        lab.check(name, cwd, command).await;
    }
    // The daemon had its second; the call's end killed it (and it could not write).
    tokio::time::sleep(Duration::from_millis(1500)).await;
    lab.intact("after the daemon");
    assert!(tcp.accept().is_err(), "a TCP connection reached the host");
    assert!(unix.accept().is_err(), "a Unix connection reached the host");
    assert!(
        abstract_listener.accept().is_err(),
        "an abstract connection reached the host"
    );

    // What must still work.
    lab.allowed(
        "write in the workspace",
        "echo hi > f && cat f > /dev/null && echo OK",
    )
    .await;
    lab.allowed(
        "write the call's temp folder",
        "echo x > \"$TMPDIR/t\" && mktemp > /dev/null && echo OK",
    )
    .await;
    lab.allowed(
        "read outside files",
        "cat /etc/hostname > /dev/null && echo OK",
    )
    .await;
    lab.allowed("git status", "git status --short > /dev/null && echo OK")
        .await;
    lab.allowed(
        "git diff of a new file",
        "echo new > n.txt && git add -N n.txt 2>/dev/null; git diff --stat >/dev/null && echo OK",
    )
    .await;
    lab.allowed("socketpair", &py("import socket; a, b = socket.socketpair(); a.send(b\"x\"); print(\"OK\" if b.recv(1) == b\"x\" else \"no\")")).await;
    lab.allowed(
        "pipes and subprocesses",
        "ls | wc -l > /dev/null && sh -c 'echo OK'",
    )
    .await;
    lab.allowed(
        "python3 -m venv",
        "python3 -m venv venv > /dev/null && venv/bin/python -c 'print(\"OK\")'",
    )
    .await;
    lab.intact("after the allowed cases");
    lab.service.close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn results_state_the_sandbox_and_hooks_run_outside_it() {
    // One list of default protected paths: the sandbox's and the file tools' agree.
    assert_eq!(
        iris_sandbox::DEFAULT_PROTECTED,
        iris_fs::workspace::DEFAULT_PROTECTED
    );
    // The temp folder of a host that died mid-call is swept by the next prepare.
    let mut dead = std::process::Command::new("true").spawn().unwrap();
    let dead_pid = dead.id();
    dead.wait().unwrap();
    let stale = std::env::temp_dir().join(format!("iris-call-{dead_pid}-1-0"));
    std::fs::create_dir_all(&stale).unwrap();
    let lab = Lab::new(NetworkAccess::Off).await;
    assert!(!stale.exists(), "{stale:?} was not swept");
    let out = lab.run(".", "true").await;
    let data = iris_command::outcome_result(&out).data;
    let sandbox = &data["sandbox"];
    assert_eq!(sandbox["filesystem"], "workspace-write");
    assert_eq!(sandbox["network"], "off");
    assert_eq!(sandbox["proxy_refusals"], serde_json::json!([]));
    let protected: Vec<&str> = sandbox["protected"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p.as_str().unwrap())
        .collect();
    for p in ["agent.yaml", "hooks/no-rm.sh", ".git", ".iris"] {
        let full = lab.ws.join(p);
        assert!(
            protected.contains(&full.to_str().unwrap()),
            "{p}: {protected:?}"
        );
    }
    // The owner's hook command is not the model's: no sandbox.
    let hook = lab
        .service
        .execute(
            &CommandScope::new("run-sandbox", "s"),
            CommandRequest::shell(
                "hook",
                format!("echo ok > {}/outside/hook", lab.root.display()),
                ".",
            )
            .owner(),
        )
        .await
        .unwrap();
    assert!(hook.success() && hook.sandbox.is_none(), "{hook:?}");
    assert!(lab.root.join("outside/hook").exists());
    // Each call's temp folder is gone with the call.
    let out = lab.run(".", "echo \"$TMPDIR\"").await;
    let temp = PathBuf::from(out.stdout.trim());
    assert!(
        temp.starts_with(std::env::temp_dir()) && !temp.exists(),
        "{temp:?}"
    );
    lab.service.close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_missing_helper_fails_closed() {
    let dir = tempfile::tempdir().unwrap();
    let service = CommandService::new(CommandConfig::native(), dir.path())
        .unwrap()
        .with_sandbox_helper(dir.path().join("no-such-helper"));
    let err = service.prepare().await.unwrap_err();
    assert_eq!(err.code(), "COMMAND_SANDBOX_UNAVAILABLE");
    let message = err.to_string();
    assert!(
        message.contains("no-such-helper")
            && message.contains("filesystem: off, network: on")
            && message.contains("docker"),
        "{message}"
    );
    // A helper that cannot enforce the plan fails the same way: `/bin/false` is one.
    let service = CommandService::new(CommandConfig::native(), dir.path())
        .unwrap()
        .with_sandbox_helper("/bin/false");
    assert_eq!(
        service.prepare().await.unwrap_err().code(),
        "COMMAND_SANDBOX_UNAVAILABLE"
    );
    // With the sandbox off nothing is looked up.
    let off = CommandConfig::native().with_sandbox(SandboxPolicy::off());
    let service = CommandService::new(off, dir.path())
        .unwrap()
        .with_sandbox_helper(dir.path().join("no-such-helper"));
    service.prepare().await.unwrap();
}

/// A loopback HTTP server answering every request with `hello from <Host header>`.
async fn http_server() -> u16 {
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
    let listener = tokio::net::TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
        .await
        .unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            tokio::spawn(async move {
                let mut buf = vec![0u8; 4096];
                let n = stream.read(&mut buf).await.unwrap_or(0);
                let head = String::from_utf8_lossy(&buf[..n]).to_string();
                let host = head
                    .lines()
                    .find_map(|l| l.strip_prefix("Host: "))
                    .unwrap_or("?")
                    .to_owned();
                let body = format!("hello from {host}");
                let reply = format!(
                    "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                    body.len()
                );
                let _ = stream.write_all(reply.as_bytes()).await;
            });
        }
    });
    port
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn network_allow_goes_through_the_proxy_to_listed_domains_only() {
    let port = http_server().await;
    let lab = Lab::new(NetworkAccess::Allow(vec!["allowed.test".into()])).await;
    // Allowed: curl and Python's urllib, through the proxy the environment names.
    let curl = lab
        .run(".", &format!("curl -s -m 10 http://allowed.test:{port}/"))
        .await;
    assert_eq!(
        curl.stdout,
        format!("hello from allowed.test:{port}"),
        "{curl:?}"
    );
    let urllib = lab
        .run(
            ".",
            &py(&format!(
                "import urllib.request; print(urllib.request.urlopen(\"http://allowed.test:{port}/\", timeout=10).read().decode())"
            )),
        )
        .await;
    assert!(urllib.success(), "{urllib:?}");
    assert_eq!(
        urllib.stdout.trim(),
        format!("hello from allowed.test:{port}")
    );
    assert_eq!(
        urllib.sandbox.as_ref().unwrap().network,
        NetworkAccess::Allow(vec!["allowed.test".into()])
    );
    // Refused: another name (plain HTTP and CONNECT), the server's port directly, UDP.
    let other = lab
        .run(
            ".",
            &format!(
                "curl -s -m 10 -o /dev/null -w '%{{http_code}}' http://other.test:{port}/; \
                 curl -s -m 10 -p http://other.test:{port}/ && echo ESCAPED; true"
            ),
        )
        .await;
    assert!(
        other.stdout.starts_with("403") && !other.stdout.contains("ESCAPED"),
        "{other:?}"
    );
    assert_eq!(
        other.sandbox.as_ref().unwrap().proxy_refusals,
        vec!["other.test".to_owned()]
    );
    for (name, code) in [
        (
            "TCP past the proxy",
            format!("import socket; socket.create_connection((\"127.0.0.1\", {port}), 2); print(\"ESCAPED\")"),
        ),
        (
            "UDP",
            "import socket; s=socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.sendto(b\"q\", (\"127.0.0.1\", 53)); print(\"ESCAPED\")".to_owned(),
        ),
        (
            "a Unix socket",
            "import socket; s=socket.socket(socket.AF_UNIX); s.connect(\"/var/run/docker.sock\"); print(\"ESCAPED\")".to_owned(),
        ),
    ] {
        lab.check(name, ".", &py(&code)).await;
    }
    lab.service.close().await.unwrap();
}
