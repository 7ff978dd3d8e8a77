//! The command sandbox through the `iris` binary, black-box: one corpus of escape
//! attempts run through `iris call` and through `iris run` (a scripted model whose
//! turns make the attempts), natively and in Docker mode where an attempt applies,
//! with an agent YAML whose own files (the YAML, its hook script, `.git/hooks`, `.iris`)
//! must stay unchanged, secrets beside the workspace and inside it that must stay
//! unread, and an outside folder that must stay empty. The `iris` binary is its own
//! sandbox helper.

use std::net::{Ipv4Addr, TcpListener, UdpSocket};
use std::os::linux::net::SocketAddrExt as _;
use std::os::unix::net::{SocketAddr, UnixListener};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use serde_json::{Value, json};

use super::iris;

const SECRET: &str = "s3cret-value";
const HOOK: &str = "#!/bin/sh\necho '{}'\n";

/// Which boundary an attempt tries to cross.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Category {
    /// Read a `deny_read` path.
    ReadSecret,
    /// Write outside the workspace.
    WriteOutside,
    /// Change a protected path inside the workspace.
    Protected,
    /// Reach the network or a host socket.
    Network,
    /// Reach or outlive the host's processes, or change the process's own limits.
    Process,
    /// Ask for a wider sandbox without a human's approval.
    Escalation,
}

/// How an attempt applies in Docker mode.
#[derive(Debug, Clone, Copy)]
enum InDocker {
    /// It must fail the same way: no `ESCAPED`, no secret, the host's disk untouched.
    Same,
    /// The container's own file system or network namespace absorbs it (it may
    /// "succeed" in there); only the host's disk and listeners are checked.
    HostOnly,
    /// Not meaningful in a container, for the reason given.
    No(&'static str),
}

/// The tool an attempt calls.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Tool {
    Shell,
    Python,
    /// `exec_command` with `sandbox: {network: on}`.
    ShellWidened,
    /// `exec_command` with `sandbox: {filesystem: off}`.
    ShellUnconfined,
}

/// One escape attempt: it prints `ESCAPED` only when the forbidden thing succeeded.
/// `$ROOT` is the lab's root, `$WS` the workspace, `$TEST` the test process's pid (a
/// host process beside `iris`), `$TCP`, `$UDP`, `$HTTP` loopback listeners of the
/// test, `$UNIX` a host Unix socket and `$ABSTRACT` an abstract one.
#[derive(Debug, Clone, Copy)]
struct Attempt {
    category: Category,
    name: &'static str,
    tool: Tool,
    source: &'static str,
    docker: InDocker,
}

const fn attempt(
    category: Category,
    name: &'static str,
    tool: Tool,
    source: &'static str,
    docker: InDocker,
) -> Attempt {
    Attempt {
        category,
        name,
        tool,
        source,
        docker,
    }
}

use Category::{Escalation, Network, Process, Protected, ReadSecret, WriteOutside};
use InDocker::{HostOnly, No, Same};
use Tool::{Python, Shell, ShellUnconfined, ShellWidened};

/// Why an attempt on the test's own pid does not apply in a container.
const OWN_PARENT: &str = "`$PPID` in the container is the exec's own wrapper, not a host process; `$TEST` covers the host";

/// Why an attempt through `ctypes` does not apply to the offline image (Debian's
/// `python3-minimal`, without `ctypes`); the container runs with `no-new-privileges`, and
/// the host's pids are not in its pid namespace.
const NO_CTYPES: &str = "the offline image's python3-minimal has no ctypes";

/// Python that sends `GET http://<host>:$HTTP/` to the egress proxy named by
/// `HTTP_PROXY` with a bare socket (the offline image's Python has no `urllib`'s
/// `http`), leaving the status line in `head` and the body in `body`.
macro_rules! proxied_get {
    ($host:literal) => {
        concat!(
            "import os, socket\n",
            "h, p = os.environ['HTTP_PROXY'].split('//', 1)[1].strip('/').rsplit(':', 1)\n",
            "s = socket.create_connection((h, int(p)), 10)\n",
            "s.sendall(b'GET http://",
            $host,
            ":$HTTP/ HTTP/1.1\\r\\nHost: ",
            $host,
            ":$HTTP\\r\\nConnection: close\\r\\n\\r\\n')\n",
            "r = b''\n",
            "while (c := s.recv(4096)):\n    r += c\n",
            "head, _, rest = r.partition(b'\\r\\n')\n",
            "body = rest.partition(b'\\r\\n\\r\\n')[2].decode()\n",
        )
    };
}

const CORPUS: &[Attempt] = &[
    // Reads of deny_read paths (a folder and a file beside the workspace, a file and a
    // folder inside it).
    attempt(
        ReadSecret,
        "read a masked folder's file",
        Shell,
        "cat $ROOT/secrets/key",
        Same,
    ),
    attempt(
        ReadSecret,
        "read a masked file",
        Shell,
        "cat $ROOT/secret.txt",
        Same,
    ),
    attempt(
        ReadSecret,
        "list a masked folder",
        Shell,
        "ls $ROOT/secrets | grep -q key && echo ESCAPED",
        Same,
    ),
    attempt(
        ReadSecret,
        "read via /proc/self/root",
        Shell,
        "cat /proc/self/root$ROOT/secrets/key",
        Same,
    ),
    attempt(
        ReadSecret,
        "read via the host's /proc/<pid>/root",
        Shell,
        "cat /proc/$TEST/root$ROOT/secret.txt",
        Same,
    ),
    attempt(
        ReadSecret,
        "read via a symlink made here",
        Shell,
        "ln -s $ROOT/secrets/key l; cat l",
        Same,
    ),
    attempt(
        ReadSecret,
        "read via a hard link",
        Shell,
        "ln $ROOT/secret.txt h; cat h",
        Same,
    ),
    attempt(
        ReadSecret,
        "copy a secret in",
        Shell,
        "cp $ROOT/secrets/key c; cat c",
        Same,
    ),
    attempt(
        ReadSecret,
        "read with python",
        Python,
        "print(open('$ROOT/secrets/key').read())",
        Same,
    ),
    attempt(
        ReadSecret,
        "read a masked file in the workspace",
        Shell,
        "cat .env",
        Same,
    ),
    attempt(
        ReadSecret,
        "hard link a masked file in the workspace",
        Shell,
        "ln .env e2; cat e2",
        Same,
    ),
    attempt(
        ReadSecret,
        "read a masked folder in the workspace",
        Shell,
        "cat private/key",
        Same,
    ),
    // Writes outside the workspace (in Docker mode such a path is the container's own
    // file system: only the host's disk is checked).
    attempt(
        WriteOutside,
        "write outside",
        Shell,
        "echo x > $ROOT/outside/a && echo ESCAPED",
        HostOnly,
    ),
    attempt(
        WriteOutside,
        "write through ..",
        Shell,
        "echo x > ../outside/a && echo ESCAPED",
        HostOnly,
    ),
    attempt(
        WriteOutside,
        "mkdir -p outside",
        Shell,
        "mkdir -p $ROOT/outside/deep/d && echo ESCAPED",
        HostOnly,
    ),
    attempt(
        WriteOutside,
        "rename across",
        Shell,
        "echo x > m && mv m $ROOT/outside/m && echo ESCAPED",
        HostOnly,
    ),
    attempt(
        WriteOutside,
        "write /dev/shm",
        Shell,
        "echo x > /dev/shm/iris-escape-$TEST && echo ESCAPED",
        HostOnly,
    ),
    attempt(
        WriteOutside,
        "write /tmp",
        Shell,
        "echo x > /tmp/iris-escape-$TEST && echo ESCAPED",
        HostOnly,
    ),
    attempt(
        WriteOutside,
        "write through a symlink out",
        Shell,
        "ln -s $ROOT/outside/s s && echo x > s && echo ESCAPED",
        HostOnly,
    ),
    attempt(
        WriteOutside,
        "symlink swap race",
        Shell,
        "mkdir d; (for i in $(seq 200); do rm -rf d; ln -s $ROOT/outside d; rm -f d; mkdir d; done) & \
         for i in $(seq 200); do echo x > d/f$i 2>/dev/null; done; wait; true",
        HostOnly,
    ),
    attempt(
        WriteOutside,
        "write outside with python",
        Python,
        "open('$ROOT/outside/p', 'w').write('x')\nprint('ESCAPED')",
        HostOnly,
    ),
    // Rewrites of the protected paths.
    attempt(
        Protected,
        "rewrite the agent YAML",
        Shell,
        "echo 'permissions: {}' > iris.yaml && echo ESCAPED",
        Same,
    ),
    attempt(
        Protected,
        "replace the agent YAML by rename",
        Python,
        "import os\nopen('t', 'w').write('x')\nos.replace('t', 'iris.yaml')\nprint('ESCAPED')",
        Same,
    ),
    attempt(
        Protected,
        "remove the agent YAML",
        Shell,
        "rm -f iris.yaml; test -e iris.yaml || echo ESCAPED",
        Same,
    ),
    attempt(
        Protected,
        "hard link the agent YAML",
        Shell,
        "ln iris.yaml hl && echo evil >> hl && echo ESCAPED",
        Same,
    ),
    attempt(
        Protected,
        "append to the hook script",
        Shell,
        "echo 'rm -rf /' >> hooks/no-rm.sh && echo ESCAPED",
        Same,
    ),
    attempt(
        Protected,
        "swap the hook's folder",
        Shell,
        "mv hooks h2 && mkdir hooks && echo evil > hooks/no-rm.sh && echo ESCAPED",
        Same,
    ),
    attempt(
        Protected,
        "write a git hook",
        Shell,
        "echo evil > .git/hooks/pre-commit && echo ESCAPED",
        Same,
    ),
    attempt(
        Protected,
        "write a git hook from inside .git",
        Shell,
        "cd .git && echo evil > hooks/pre-commit && echo ESCAPED",
        Same,
    ),
    attempt(
        Protected,
        "write git config",
        Shell,
        "echo evil >> .git/config && echo ESCAPED",
        Same,
    ),
    attempt(
        Protected,
        "plant in .iris",
        Shell,
        "mkdir -p .iris && echo x > .iris/planted && echo ESCAPED",
        Same,
    ),
    attempt(
        Protected,
        "swap .iris",
        Shell,
        "mv .iris i2 && mkdir .iris && echo x > .iris/planted && echo ESCAPED",
        Same,
    ),
    attempt(
        Protected,
        "unmount the agent YAML",
        Shell,
        "umount iris.yaml && echo ESCAPED",
        Same,
    ),
    // Network (the policy allows `localhost` through the egress proxy, nothing else).
    attempt(
        Network,
        "TCP to loopback",
        Python,
        "import socket\nsocket.create_connection(('127.0.0.1', $TCP), 2)\nprint('ESCAPED')",
        Same,
    ),
    attempt(
        Network,
        "TCP past the proxy to the allowed server",
        Python,
        "import socket\nsocket.create_connection(('127.0.0.1', $HTTP), 2)\nprint('ESCAPED')",
        Same,
    ),
    attempt(
        Network,
        "the proxy with a host not allowed",
        Python,
        concat!(
            proxied_get!("127.0.0.1"),
            "print('ESCAPED' if b' 200 ' in head else head.decode())"
        ),
        Same,
    ),
    attempt(
        Network,
        "IPv6 TCP",
        Python,
        "import socket\nsocket.create_connection(('::1', $TCP), 2)\nprint('ESCAPED')",
        Same,
    ),
    attempt(
        Network,
        "UDP to a host listener (DNS-style)",
        Python,
        "import socket\ns = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)\ns.sendto(b'q', ('127.0.0.1', $UDP))\nprint('ESCAPED')",
        HostOnly,
    ),
    attempt(
        Network,
        "raw socket",
        Python,
        "import socket\nsocket.socket(socket.AF_INET, socket.SOCK_RAW, 1)\nprint('ESCAPED')",
        Same,
    ),
    attempt(
        Network,
        "packet socket",
        Python,
        "import socket\nsocket.socket(socket.AF_PACKET, socket.SOCK_RAW)\nprint('ESCAPED')",
        Same,
    ),
    attempt(
        Network,
        "a host Unix socket",
        Python,
        "import socket\ns = socket.socket(socket.AF_UNIX)\ns.connect('$UNIX')\nprint('ESCAPED')",
        Same,
    ),
    attempt(
        Network,
        "the Docker socket",
        Python,
        "import socket\ns = socket.socket(socket.AF_UNIX)\ns.connect('/var/run/docker.sock')\nprint('ESCAPED')",
        Same,
    ),
    attempt(
        Network,
        "the D-Bus system socket",
        Python,
        "import socket\ns = socket.socket(socket.AF_UNIX)\ns.connect('/run/dbus/system_bus_socket')\nprint('ESCAPED')",
        Same,
    ),
    attempt(
        Network,
        "an abstract Unix socket",
        Python,
        "import socket\ns = socket.socket(socket.AF_UNIX)\ns.connect('\\0$ABSTRACT')\nprint('ESCAPED')",
        Same,
    ),
    // Process tricks.
    attempt(
        Process,
        "ptrace a host process",
        Python,
        "import ctypes\nr = ctypes.CDLL(None).ptrace(16, $TEST, 0, 0)\nprint('ESCAPED' if r == 0 else 'refused')",
        No(NO_CTYPES),
    ),
    attempt(
        Process,
        "ptrace iris",
        Python,
        "import ctypes, os\nr = ctypes.CDLL(None).ptrace(16, os.getppid(), 0, 0)\nprint('ESCAPED' if r == 0 else 'refused')",
        No(OWN_PARENT),
    ),
    attempt(
        Process,
        "read a host process's memory",
        Python,
        "open('/proc/$TEST/mem', 'rb')\nprint('ESCAPED')",
        Same,
    ),
    attempt(
        Process,
        "read iris's memory",
        Python,
        "import os\nopen(f'/proc/{os.getppid()}/mem', 'rb')\nprint('ESCAPED')",
        No(OWN_PARENT),
    ),
    attempt(
        Process,
        "read a host process's environment",
        Shell,
        "cat /proc/$TEST/environ && echo ESCAPED",
        Same,
    ),
    attempt(
        Process,
        "signal a host process",
        Shell,
        "kill -0 $TEST && echo ESCAPED",
        Same,
    ),
    attempt(
        Process,
        "signal iris",
        Shell,
        "kill -0 $PPID && echo ESCAPED",
        No(OWN_PARENT),
    ),
    attempt(
        Process,
        "unshare a user namespace",
        Shell,
        "unshare -r true && echo ESCAPED",
        Same,
    ),
    attempt(
        Process,
        "unshare a network namespace",
        Shell,
        "unshare -n true && echo ESCAPED",
        Same,
    ),
    attempt(
        Process,
        "enter pid 1's namespaces",
        Shell,
        "nsenter -t 1 -m true && echo ESCAPED",
        Same,
    ),
    attempt(
        Process,
        "personality without ASLR",
        Shell,
        "setarch -R true && echo ESCAPED",
        Same,
    ),
    attempt(
        Process,
        "prctl: drop no_new_privs",
        Python,
        "import ctypes\nctypes.CDLL(None).prctl(38, 0, 0, 0, 0)\nprint('ESCAPED' if 'NoNewPrivs:\\t0' in open('/proc/self/status').read() else 'kept')",
        No(NO_CTYPES),
    ),
    attempt(
        Process,
        "mount a tmpfs",
        Shell,
        "mkdir -p mnt && mount -t tmpfs none mnt && echo ESCAPED",
        Same,
    ),
    attempt(
        Process,
        "chroot",
        Shell,
        "chroot / /bin/true && echo ESCAPED",
        Same,
    ),
    attempt(
        Process,
        "make a block device",
        Shell,
        "mknod blk b 8 0 && echo ESCAPED",
        Same,
    ),
    attempt(
        Process,
        "a setsid daemon writes later",
        Shell,
        "setsid sh -c 'sleep 2; echo x > daemon.txt' > /dev/null 2>&1 & true",
        Same,
    ),
    // Escalation without approval (the policy's `escalation` is `never`).
    attempt(
        Escalation,
        "ask for the network",
        ShellWidened,
        "echo ran > escalated.txt",
        Same,
    ),
    attempt(
        Escalation,
        "ask for the file system",
        ShellUnconfined,
        "echo x > $ROOT/outside/e; echo ran > escalated.txt",
        Same,
    ),
];

/// The listeners and files an attempt may try to reach, and the agent around them.
struct Lab {
    _dir: tempfile::TempDir,
    root: PathBuf,
    ws: PathBuf,
    yaml: String,
    tcp: TcpListener,
    udp: UdpSocket,
    unix: UnixListener,
    abstract_listener: UnixListener,
    abstract_name: String,
    http: u16,
}

impl Lab {
    /// `mode` is `native` or `docker`.
    fn new(mode: &str) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        let ws = root.join("ws");
        std::fs::create_dir_all(ws.join("hooks")).unwrap();
        std::fs::create_dir_all(ws.join("private")).unwrap();
        std::fs::create_dir_all(root.join("outside")).unwrap();
        std::fs::create_dir_all(root.join("secrets")).unwrap();
        std::fs::write(root.join("secrets/key"), SECRET).unwrap();
        std::fs::write(root.join("secret.txt"), SECRET).unwrap();
        std::fs::write(ws.join(".env"), SECRET).unwrap();
        std::fs::write(ws.join("private/key"), SECRET).unwrap();
        std::fs::write(ws.join("hooks/no-rm.sh"), HOOK).unwrap();
        let yaml = format!(
            "tools:\n  builtin: [exec.command, exec.python]\npermissions:\n  execute_mode: allow\n\
             max_turns: 200\n\
             model:\n  provider: scripted\n  script: {root}/turns.json\n\
             command:\n  mode: {mode}\n  sandbox:\n    network: {{allow: [localhost]}}\n    \
             deny_read: [{root}/secrets, {root}/secret.txt, {ws}/.env, {ws}/private]\n\
             hooks:\n  - name: guard\n    event: tool.before\n    tools: [exec_command]\n    \
             handler: {{type: command, command: sh hooks/no-rm.sh}}\n",
            root = root.display(),
            ws = ws.display(),
        );
        // `iris run` replaces the script with its turns; the model's script lives
        // outside the workspace, which commands cannot write.
        std::fs::write(root.join("turns.json"), r#"[{"text": "Done."}]"#).unwrap();
        std::fs::write(ws.join("iris.yaml"), &yaml).unwrap();
        let git = std::process::Command::new("git")
            .args(["init", "-q", "."])
            .current_dir(&ws)
            .status()
            .unwrap();
        assert!(git.success());
        std::fs::write(ws.join(".git/hooks/pre-commit"), HOOK).unwrap();
        let tcp = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).unwrap();
        tcp.set_nonblocking(true).unwrap();
        let udp = UdpSocket::bind((Ipv4Addr::LOCALHOST, 0)).unwrap();
        udp.set_nonblocking(true).unwrap();
        let unix = UnixListener::bind(root.join("host.sock")).unwrap();
        unix.set_nonblocking(true).unwrap();
        // Tests run in parallel threads of one process: each lab's name is its own.
        static LABS: AtomicUsize = AtomicUsize::new(0);
        let abstract_name = format!(
            "iris-cli-sandbox-{}-{mode}-{}",
            std::process::id(),
            LABS.fetch_add(1, Ordering::Relaxed)
        );
        let abstract_listener =
            UnixListener::bind_addr(&SocketAddr::from_abstract_name(&abstract_name).unwrap())
                .unwrap();
        abstract_listener.set_nonblocking(true).unwrap();
        Self {
            _dir: dir,
            root,
            ws,
            yaml,
            tcp,
            udp,
            unix,
            abstract_listener,
            abstract_name,
            http: http_server(),
        }
    }

    fn config(&self) -> String {
        self.ws.join("iris.yaml").display().to_string()
    }

    /// The attempt's source with its placeholders filled in.
    fn source(&self, source: &str) -> String {
        source
            .replace("$ROOT", &self.root.display().to_string())
            .replace("$WS", &self.ws.display().to_string())
            .replace("$TEST", &std::process::id().to_string())
            .replace("$TCP", &self.tcp.local_addr().unwrap().port().to_string())
            .replace("$UDP", &self.udp.local_addr().unwrap().port().to_string())
            .replace("$HTTP", &self.http.to_string())
            .replace("$UNIX", &self.root.join("host.sock").display().to_string())
            .replace("$ABSTRACT", &self.abstract_name)
    }

    /// The tool name and arguments of an attempt.
    fn call_of(&self, tool: Tool, source: &str) -> (&'static str, Value) {
        let source = self.source(source);
        match tool {
            Tool::Shell => ("exec_command", json!({"command": source})),
            Tool::Python => ("run_python", json!({"code": source})),
            Tool::ShellWidened => (
                "exec_command",
                json!({"command": source, "sandbox": {"network": "on"}}),
            ),
            Tool::ShellUnconfined => (
                "exec_command",
                json!({"command": source, "sandbox": {"filesystem": "off"}}),
            ),
        }
    }

    /// `iris --json call <tool> <input>`.
    fn call(&self, tool: Tool, source: &str) -> super::Run {
        let (name, input) = self.call_of(tool, source);
        let config = self.config();
        iris(
            &self.ws,
            &[
                "--config",
                &config,
                "--json",
                "call",
                name,
                &input.to_string(),
            ],
            &[],
            "",
        )
    }

    /// `iris --json run` with a scripted model that makes one call per turn, in order;
    /// returns each call's result and what the run printed.
    fn run(&self, calls: &[(Tool, &str)]) -> (Vec<Value>, super::Run) {
        let mut script: Vec<Value> = calls
            .iter()
            .enumerate()
            .map(|(i, (tool, source))| {
                let (name, arguments) = self.call_of(*tool, source);
                let mut turn = json!({"tool_calls": [{"name": name, "arguments": arguments}]});
                if i > 0 {
                    turn["expect_tool_results"] = json!(1);
                }
                turn
            })
            .collect();
        script.push(json!({"expect_tool_results": 1, "text": "Done."}));
        std::fs::write(
            self.root.join("turns.json"),
            serde_json::to_string(&script).unwrap(),
        )
        .unwrap();
        let config = self.config();
        let run = iris(
            &self.ws,
            &["--config", &config, "--json", "run", "Try everything"],
            &[],
            "",
        );
        let results: Vec<Value> = run
            .stdout
            .lines()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .filter(|e| e["type"] == "tool_call_finished")
            .map(|e| e["result"].clone())
            .collect();
        (results, run)
    }

    /// What every attempt leaves alone on the host.
    fn intact(&self, name: &str) {
        let outside: Vec<_> = std::fs::read_dir(self.root.join("outside"))
            .unwrap()
            .collect();
        assert!(outside.is_empty(), "{name}: wrote outside: {outside:?}");
        let read = |p: &Path| std::fs::read_to_string(p).unwrap_or_default();
        assert_eq!(
            read(&self.ws.join("iris.yaml")),
            self.yaml,
            "{name}: the YAML"
        );
        assert_eq!(
            read(&self.ws.join("hooks/no-rm.sh")),
            HOOK,
            "{name}: the hook"
        );
        assert_eq!(
            read(&self.ws.join(".git/hooks/pre-commit")),
            HOOK,
            "{name}: pre-commit"
        );
        assert!(
            !self.ws.join(".git/config").metadata().is_ok_and(|m| read(
                &self.ws.join(".git/config")
            )
            .contains("evil")
                || m.len() == 0),
            "{name}: git config"
        );
        assert!(
            self.ws.join(".iris").is_dir() && !self.ws.join(".iris/planted").exists(),
            "{name}: .iris"
        );
        assert!(!self.ws.join("escalated.txt").exists(), "{name}: escalated");
        for tmp in ["/dev/shm", "/tmp"] {
            let path = Path::new(tmp).join(format!("iris-escape-{}", std::process::id()));
            assert!(!path.exists(), "{name}: {path:?}");
        }
        assert!(
            self.tcp.accept().is_err(),
            "{name}: a TCP connection reached the host"
        );
        let mut buf = [0u8; 8];
        assert!(
            self.udp.recv(&mut buf).is_err(),
            "{name}: a datagram reached the host"
        );
        assert!(
            self.unix.accept().is_err(),
            "{name}: a Unix connection reached the host"
        );
        assert!(
            self.abstract_listener.accept().is_err(),
            "{name}: an abstract connection reached the host"
        );
    }

    /// After the last attempt: the daemon had its time and is gone.
    fn after_all(&self, name: &str) {
        std::thread::sleep(Duration::from_millis(2500));
        self.intact(name);
        assert!(
            !self.ws.join("daemon.txt").exists(),
            "{name}: a daemon outlived its call"
        );
    }
}

/// A loopback HTTP server answering every request with `hello from <Host header>`.
fn http_server() -> u16 {
    use std::io::{Read as _, Write as _};
    let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for mut stream in listener.incoming().flatten() {
            let mut buf = [0u8; 4096];
            let n = stream.read(&mut buf).unwrap_or(0);
            let head = String::from_utf8_lossy(&buf[..n]).to_string();
            let host = head
                .lines()
                .find_map(|l| l.strip_prefix("Host: "))
                .unwrap_or("?")
                .to_owned();
            let body = format!("hello from {host}");
            let _ = write!(
                stream,
                "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            );
        }
    });
    port
}

/// One call's result text (stdout, stderr, error) must not show an escape.
fn escaped(result: &str) -> bool {
    result.contains("ESCAPED") || result.contains(SECRET)
}

/// The proxy refused `127.0.0.1` (the attempt that names a host not allowed), and the
/// call's result says so.
fn check_refusal(name: &str, result: &Value) {
    assert_eq!(
        result["data"]["sandbox"]["proxy_refusals"],
        json!(["127.0.0.1"]),
        "{name}: {result}"
    );
}

#[test]
fn the_corpus_has_every_category() {
    let count = |c: Category| CORPUS.iter().filter(|a| a.category == c).count();
    for (category, least) in [
        (ReadSecret, 8),
        (WriteOutside, 7),
        (Protected, 8),
        (Network, 10),
        (Process, 10),
        (Escalation, 2),
    ] {
        assert!(
            count(category) >= least,
            "{category:?}: {}",
            count(category)
        );
    }
    assert!(CORPUS.len() >= 40, "{} attempts", CORPUS.len());
}

#[test]
fn iris_call_cannot_escape_the_sandbox() {
    let lab = Lab::new("native");
    for a in CORPUS {
        let run = lab.call(a.tool, a.source);
        let text = format!("{}{}", run.stdout, run.stderr);
        assert!(!escaped(&text), "{}: escaped\n{run:?}", a.name);
        assert!(!run.stderr.contains("panicked"), "{}: {run:?}", a.name);
        if a.name == "the proxy with a host not allowed" {
            check_refusal(a.name, &serde_json::from_str(&run.stdout).unwrap());
        }
        if a.category == Escalation {
            assert_eq!(run.code, 2, "{}: {run:?}", a.name);
            assert!(text.contains("INVALID_INPUT"), "{}: {run:?}", a.name);
        }
        lab.intact(a.name);
    }
    lab.after_all("iris call");
    // What must still work.
    let ok = |tool: Tool, source: &str, expect: &str| {
        let run = lab.call(tool, source);
        assert!(
            run.code == 0 && run.stdout.contains(expect),
            "{source}: {run:?}"
        );
    };
    ok(Shell, "echo hi > f.txt && git status --short", "f.txt");
    ok(
        Python,
        "open('g.txt', 'w').write('ok')\nprint(open('g.txt').read())",
        "ok",
    );
    ok(
        Shell,
        "python3 -m venv venv > /dev/null && venv/bin/python -c 'print(\"venv works\")'",
        "venv works",
    );
    ok(
        Shell,
        "curl -s -m 10 http://localhost:$HTTP/",
        &format!("hello from localhost:{}", lab.http),
    );
}

/// The same corpus through `iris run`: a scripted model makes every attempt, one per
/// turn, then the allowed cases; checked by each call's result and by the disk.
#[test]
fn iris_run_cannot_escape_the_sandbox() {
    let lab = Lab::new("native");
    let mut calls: Vec<(Tool, &str)> = CORPUS.iter().map(|a| (a.tool, a.source)).collect();
    let allowed = [
        (Shell, "echo hi > f.txt && git status --short"),
        (
            Shell,
            "python3 -m venv venv > /dev/null && venv/bin/python -c 'print(\"venv works\")'",
        ),
        (Shell, "curl -s -m 10 http://localhost:$HTTP/"),
    ];
    calls.extend(allowed);
    let (results, run) = lab.run(&calls);
    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(results.len(), calls.len(), "{run:?}");
    for (a, result) in CORPUS.iter().zip(&results) {
        assert!(
            !escaped(&result.to_string()),
            "{}: escaped\n{result}",
            a.name
        );
        if a.name == "the proxy with a host not allowed" {
            check_refusal(a.name, result);
        }
        if a.category == Escalation {
            assert_eq!(result["error"]["code"], "INVALID_INPUT", "{result}");
        }
    }
    lab.after_all("iris run");
    let text = |i: usize| results[CORPUS.len() + i]["content"].to_string();
    assert!(text(0).contains("f.txt"), "{}", results[CORPUS.len()]);
    assert!(text(1).contains("venv works"), "{}", text(1));
    assert!(
        text(2).contains(&format!("hello from localhost:{}", lab.http)),
        "{}",
        text(2)
    );
}

/// The corpus in Docker mode through `iris run`, against the real engine and the
/// `iris-command:local` image: every attempt that applies (see [`InDocker`]), then the
/// allowed cases (the offline image has neither `git`, `curl` nor `venv`: a write in the
/// workspace, and Python's bare socket through the proxy).
#[test]
fn iris_run_in_docker_cannot_escape_either() {
    let lab = Lab::new("docker");
    let applies: Vec<&Attempt> = CORPUS
        .iter()
        .filter(|a| !matches!(a.docker, No(_)))
        .collect();
    // Only attempts on iris's own process (the container has no host pid) and those
    // needing ctypes stay out.
    let left_out: Vec<String> = CORPUS
        .iter()
        .filter_map(|a| match a.docker {
            No(why) => Some(format!("{}: {why}", a.name)),
            Same | HostOnly => None,
        })
        .collect();
    assert!(left_out.len() <= 5 && applies.len() >= 40, "{left_out:#?}");
    let mut calls: Vec<(Tool, &str)> = applies.iter().map(|a| (a.tool, a.source)).collect();
    calls.extend([
        (Shell, "echo hi > f.txt && cat f.txt"),
        (
            Python,
            concat!(proxied_get!("localhost"), "print(head.decode(), body)"),
        ),
    ]);
    let (results, run) = lab.run(&calls);
    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(results.len(), calls.len(), "{run:?}");
    for (a, result) in applies.iter().zip(&results) {
        match a.docker {
            Same => assert!(
                !escaped(&result.to_string()),
                "{}: escaped\n{result}",
                a.name
            ),
            HostOnly => assert!(!result.to_string().contains(SECRET), "{}: {result}", a.name),
            No(_) => unreachable!(),
        }
        // Each attempt ran: the image has what it uses.
        assert!(
            !result.to_string().contains("ModuleNotFoundError"),
            "{}: {result}",
            a.name
        );
        if a.name == "the proxy with a host not allowed" {
            check_refusal(a.name, result);
        }
        if a.category == Escalation {
            assert_eq!(result["error"]["code"], "INVALID_INPUT", "{result}");
        } else {
            assert_eq!(result["data"]["mode"], "docker", "{}: {result}", a.name);
        }
    }
    lab.after_all("iris run in docker");
    let text = |i: usize| results[applies.len() + i]["content"].to_string();
    assert!(text(0).contains("hi"), "{}", text(0));
    assert!(
        text(1).contains(&format!("200 OK hello from localhost:{}", lab.http)),
        "{}",
        text(1)
    );
    // The protected paths are read-only mounts of the container.
    let protected = &results[0]["data"]["sandbox"]["protected"];
    for p in ["iris.yaml", "hooks/no-rm.sh", ".git", ".iris"] {
        assert!(
            protected
                .as_array()
                .unwrap()
                .contains(&json!(lab.ws.join(p))),
            "{p}: {protected}"
        );
    }
}

/// `iris check` says which rules of the policy this kernel enforces and with what
/// (this kernel: Landlock ABI 7, seccomp, user namespaces), in text and in JSON; with
/// `network: {allow: …}` it names the proxy's domains; a helper that cannot run makes
/// it name COMMAND_SANDBOX_UNAVAILABLE and the opt-outs; Docker mode and an agent
/// without commands have no sandbox block.
#[test]
fn iris_check_prints_what_this_kernel_enforces() {
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path();
    let write = |name: &str, yaml: &str| {
        std::fs::write(ws.join(name), yaml).unwrap();
        ws.join(name).to_str().unwrap().to_owned()
    };
    let default = write("default.yaml", "tools:\n  builtin: [exec.command]\n");
    let allow = write(
        "allow.yaml",
        "tools:\n  builtin: [exec.command]\ncommand:\n  sandbox:\n    network: {allow: [pypi.org, '*.pythonhosted.org']}\n",
    );
    let none = write("none.yaml", "tools:\n  builtin: [file.read]\n");
    let docker = write(
        "docker.yaml",
        "tools:\n  builtin: [file.read]\ncommand:\n  mode: docker\n",
    );
    let off = write(
        "off.yaml",
        "tools:\n  builtin: [exec.command]\ncommand:\n  sandbox: {filesystem: off, network: on}\n",
    );
    let check = |config: &str, json: bool, env: &[(&str, &str)]| {
        let mut args = vec!["--config", config];
        if json {
            args.push("--json");
        }
        args.push("check");
        iris(ws, &args, env, "")
    };

    let run = check(&default, false, &[]);
    assert_eq!(run.code, 0, "{run:?}");
    let lines: Vec<&str> = run.stdout.lines().collect();
    let abi = lines[0]
        .strip_prefix("sandbox: Landlock ABI ")
        .and_then(|rest| rest.split(' ').next())
        .and_then(|abi| abi.parse::<i32>().ok())
        .unwrap_or_else(|| panic!("{run:?}"));
    assert!(abi >= 6, "{run:?}");
    assert_eq!(
        lines,
        [
            &*format!("sandbox: Landlock ABI {abi} (needs 6), seccomp yes, user namespaces yes"),
            &*format!("  enforced  file system: workspace-write [Landlock ABI 6 (found {abi})]"),
            "  enforced  deny_read paths masked, protected paths read-only [user and mount namespaces]",
            &*format!(
                "  enforced  network off: no TCP connect or bind [Landlock ABI 6 (found {abi})]"
            ),
            "  enforced  network off: no UDP, Unix, raw or packet socket [seccomp]",
            &*format!(
                "  enforced  no signal to or abstract socket of the host [Landlock ABI 6 (found {abi})]"
            ),
            "  enforced  no ptrace, namespaces, mounts, bpf, keyrings or io_uring [seccomp]",
            "ok",
        ],
        "{run:?}"
    );

    let run = check(&allow, true, &[]);
    assert_eq!(run.code, 0, "{run:?}");
    let report: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
    let sandbox = &report["sandbox"];
    assert_eq!(sandbox["enforced"], true, "{report}");
    assert_eq!(sandbox["kernel"]["landlock_abi"], abi);
    assert_eq!(sandbox["kernel"]["landlock_abi_needed"], 6);
    assert_eq!(sandbox["kernel"]["seccomp"]["available"], true);
    assert_eq!(sandbox["kernel"]["user_namespaces"]["available"], true);
    let rules = sandbox["rules"].as_array().unwrap();
    assert!(rules.iter().all(|r| r["enforced"] == true), "{report}");
    assert!(
        rules.iter().any(|r| r["rule"]
            == "network allow: the proxy admits only pypi.org, *.pythonhosted.org"
            && r["mechanism"] == "egress proxy on 127.0.0.1"),
        "{report}"
    );

    // The helper cannot run: the problem and the block both name it and the opt-outs.
    let missing = [("IRIS_SANDBOX_HELPER", "/nonexistent/iris-sandbox")];
    let run = check(&default, false, &missing);
    assert_eq!(run.code, 1, "{run:?}");
    assert!(
        run.stdout
            .contains("sandbox: the kernel could not be probed\n  error[COMMAND_SANDBOX_UNAVAILABLE]: the command sandbox cannot be enforced: IRIS_SANDBOX_HELPER names `/nonexistent/iris-sandbox`"),
        "{run:?}"
    );
    assert!(run.stdout.contains("`command.mode: docker`"), "{run:?}");
    let run = check(&default, true, &missing);
    let report: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!(report["sandbox"]["enforced"], false, "{report}");
    assert_eq!(
        report["sandbox"]["missing"]["code"],
        "COMMAND_SANDBOX_UNAVAILABLE"
    );

    let run = check(&off, false, &[]);
    assert_eq!(
        run.stdout,
        "sandbox: off (command.sandbox is filesystem: off, network: on): native commands run unrestricted\nok\n",
        "{run:?}"
    );
    let run = check(&none, false, &[]);
    assert_eq!((run.code, run.stdout.as_str()), (0, "ok\n"), "{run:?}");
    let run = check(&docker, true, &[]);
    let report: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
    assert!(report.get("sandbox").is_none(), "{report}");
}

/// An MCP stdio server whose override says `sandbox: true`, called through `iris call`:
/// the agent's own `command.sandbox` applies to it (its extra `deny_read` folder), the
/// agent YAML is protected from it, and its tools still work in the workspace.
#[test]
fn an_mcp_server_opted_into_the_sandbox_gets_the_agents_policy() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    let ws = root.join("ws");
    std::fs::create_dir_all(&ws).unwrap();
    std::fs::create_dir_all(root.join("secrets")).unwrap();
    std::fs::write(root.join("secrets/key"), SECRET).unwrap();
    let server = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../iris-mcp/tests/fixtures/mcp/sdk_server.py")
        .display()
        .to_string();
    let mcp = serde_json::json!({"mcpServers": {
        "boxed": {"command": super::mcp::python(), "args": [server, "--file-tools"]},
    }});
    std::fs::write(ws.join("mcp.json"), mcp.to_string()).unwrap();
    let yaml = format!(
        "command:\n  sandbox:\n    deny_read: [{secrets}]\nmcp:\n  path: mcp.json\n  overrides:\n    boxed: {{sandbox: true}}\n",
        secrets = root.join("secrets").display()
    );
    std::fs::write(ws.join("iris.yaml"), &yaml).unwrap();
    let config = ws.join("iris.yaml");
    let call = |tool: &str, input: serde_json::Value| {
        iris(
            &ws,
            &[
                "--config",
                config.to_str().unwrap(),
                "call",
                tool,
                &input.to_string(),
                "--yes",
            ],
            &[],
            "",
        )
    };
    let key = root.join("secrets/key").display().to_string();
    let read = call("mcp__boxed__read_path", serde_json::json!({"path": key}));
    assert!(
        read.stdout.starts_with("refused:") && !read.stdout.contains(SECRET),
        "{read:?}"
    );
    let rewrite = call(
        "mcp__boxed__write_path",
        serde_json::json!({"path": config.display().to_string(), "text": "mcp: {}\n"}),
    );
    assert!(rewrite.stdout.starts_with("refused:"), "{rewrite:?}");
    assert_eq!(std::fs::read_to_string(&config).unwrap(), yaml);
    let note = ws.join("note.txt");
    let write = call(
        "mcp__boxed__write_path",
        serde_json::json!({"path": note.display().to_string(), "text": "in"}),
    );
    assert_eq!(write.stdout.trim(), "written", "{write:?}");
    assert_eq!(std::fs::read_to_string(&note).unwrap(), "in");
}

/// One command that tries three escapes and leaves one honest trace: it copies a
/// `deny_read` secret into the workspace, writes beside the workspace, appends to the
/// agent YAML (and to each file named in `$FILES`), then writes `ran.txt`.
const MEET_ATTEMPT: &str = "cat $ROOT/secrets/key > leaked.txt; echo x > $ROOT/outside/o; \
                            for f in iris.yaml $FILES; do echo evil >> $f; done; echo ran > ran.txt";

/// A workspace for the places where other features meet the sandbox: a secret folder
/// beside it (in the agent's `deny_read`), an outside folder, and agent files that must
/// stay unchanged.
struct Meet {
    _dir: tempfile::TempDir,
    root: PathBuf,
    ws: PathBuf,
    /// Protected files (relative to the workspace) with their original text.
    files: Vec<(String, String)>,
}

impl Meet {
    /// `iris.yaml` is `yaml` with `$SANDBOX` replaced by the `command.sandbox` block;
    /// `extra` are more files of the agent (path, text), `$ROOT` and `$WS` filled in.
    fn new(yaml: &str, extra: &[(&str, &str)]) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        let ws = root.join("ws");
        std::fs::create_dir_all(&ws).unwrap();
        std::fs::create_dir_all(root.join("outside")).unwrap();
        std::fs::create_dir_all(root.join("secrets")).unwrap();
        std::fs::write(root.join("secrets/key"), SECRET).unwrap();
        let sandbox = format!(
            "command:\n  sandbox:\n    deny_read: [{}]\n",
            root.join("secrets").display()
        );
        let mut meet = Self {
            _dir: dir,
            root,
            ws,
            files: Vec::new(),
        };
        let yaml = meet.fill(&yaml.replace("$SANDBOX", &sandbox));
        let mut files = vec![("iris.yaml".to_owned(), yaml)];
        files.extend(
            extra
                .iter()
                .map(|(path, text)| ((*path).to_owned(), meet.fill(text))),
        );
        for (path, text) in &files {
            std::fs::write(meet.ws.join(path), text).unwrap();
        }
        meet.files = files;
        meet
    }

    /// `$ROOT`, `$WS`, `$FILES` (the agent's files besides the YAML) and `$ATTEMPT`.
    fn fill(&self, text: &str) -> String {
        let others: Vec<&str> = self.files.iter().skip(1).map(|(p, _)| p.as_str()).collect();
        text.replace("$ATTEMPT", MEET_ATTEMPT)
            .replace("$ROOT", &self.root.display().to_string())
            .replace("$WS", &self.ws.display().to_string())
            .replace("$FILES", &others.join(" "))
    }

    fn iris(&self, args: &[&str]) -> super::Run {
        let mut all = vec!["--config", "iris.yaml"];
        all.extend_from_slice(args);
        iris(&self.ws, &all, &[], "")
    }

    /// The attempt ran (`ran.txt`) and every escape failed.
    fn held(&self, what: &str, output: &str) {
        assert!(
            self.ws.join("ran.txt").exists(),
            "{what}: the command never ran\n{output}"
        );
        assert!(!output.contains(SECRET), "{what}: {output}");
        let leaked = std::fs::read_to_string(self.ws.join("leaked.txt")).unwrap_or_default();
        assert!(!leaked.contains(SECRET), "{what}: the secret was read");
        let outside: Vec<_> = std::fs::read_dir(self.root.join("outside"))
            .unwrap()
            .collect();
        assert!(outside.is_empty(), "{what}: wrote outside: {outside:?}");
        for (path, text) in &self.files {
            assert_eq!(
                &std::fs::read_to_string(self.ws.join(path)).unwrap(),
                text,
                "{what}: {path} changed"
            );
        }
    }
}

/// A subagent's commands run in the lead's sandbox (the child borrows the lead's
/// command service): the child's `exec_command` cannot read the lead's `deny_read`
/// secret, write outside, or change the lead's YAML, the subagent catalog or the
/// child's own YAML (files the lead's YAML references).
#[test]
fn a_subagents_commands_run_in_the_sandbox() {
    let mut meet = Meet::new(
        "tools:\n  builtin: [file.read]\n  subagent: agents.yaml\n\
         permissions: {execute_mode: allow}\n$SANDBOX\
         model:\n  provider: scripted\n  script:\n    \
         - tool_calls: [{name: subagent, arguments: {prompt: go}}]\n    \
         - {expect_tool_results: 1, text: Done.}\n",
        &[
            (
                "agents.yaml",
                "default: worker\nagents:\n  worker: {path: worker.yaml, description: Runs one command.}\n",
            ),
            ("worker.yaml", ""),
        ],
    );
    // The child's YAML names the files it must not change, itself among them.
    let worker = meet.fill(
        "tools:\n  builtin: [exec.command]\npermissions: {execute_mode: allow}\n\
         model:\n  provider: scripted\n  script:\n    \
         - tool_calls: [{name: exec_command, arguments: {command: '$ATTEMPT'}}]\n    \
         - {expect_tool_results: 1, text: Tried.}\n",
    );
    std::fs::write(meet.ws.join("worker.yaml"), &worker).unwrap();
    meet.files[2].1 = worker;
    let run = meet.iris(&["--json", "run", "Delegate"]);
    assert_eq!(run.code, 0, "{run:?}");
    meet.held("subagent", &format!("{run:?}"));
}

/// A run that waits for approval of its command and is resumed by a new process
/// (`iris resume --approve`): the approved command runs in the sandbox.
#[test]
fn a_resumed_runs_command_runs_in_the_sandbox() {
    let meet = Meet::new(
        "tools:\n  builtin: [exec.command]\npermissions: {execute_mode: confirm}\n$SANDBOX\
         model:\n  provider: scripted\n  script:\n    \
         - tool_calls: [{name: exec_command, arguments: {command: '$ATTEMPT'}}]\n    \
         - {expect_tool_results: 1, text: Done.}\n",
        &[],
    );
    let waiting = meet.iris(&["run", "Try"]);
    assert_eq!(waiting.code, 4, "{waiting:?}");
    assert!(!meet.ws.join("ran.txt").exists(), "{waiting:?}");
    let run_id = waiting
        .stderr
        .lines()
        .find_map(|l| l.strip_prefix("error[RUN_WAITING]: run "))
        .and_then(|rest| rest.split(' ').next())
        .unwrap_or_else(|| panic!("no RUN_WAITING line: {waiting:?}"))
        .to_owned();
    let resumed = meet.iris(&["--json", "resume", &run_id, "--approve"]);
    assert_eq!(resumed.code, 0, "{resumed:?}");
    meet.held("resume", &format!("{resumed:?}"));
}

/// Code mode: the script's own Python runs in the sandbox (it cannot read the secret
/// or write outside), its channel back to the executor stays open (its inner
/// `exec_command` runs), and that inner command is sandboxed too.
#[test]
fn a_tool_scripts_python_and_its_inner_commands_run_in_the_sandbox() {
    let meet = Meet::new(
        "tools:\n  builtin: [exec.command, exec.tool_script]\n  script: {callable: [exec_command]}\n\
         permissions: {execute_mode: allow}\n$SANDBOX",
        &[],
    );
    let code = meet.fill(
        "import iris_tools\n\
         for attempt in (lambda: print(open('$ROOT/secrets/key').read()),\n\
                         lambda: open('$ROOT/outside/py', 'w').write('x'),\n\
                         lambda: open('iris.yaml', 'a').write('evil')):\n\
         \x20   try:\n\
         \x20       attempt()\n\
         \x20       print('ESCAPED')\n\
         \x20   except OSError as e:\n\
         \x20       print('refused', e.errno)\n\
         print(iris_tools.exec_command(command='$ATTEMPT').text)\n\
         print('channel open')\n",
    );
    let input = json!({ "code": code }).to_string();
    let run = meet.iris(&["call", "run_tool_script", &input]);
    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(run.stdout.matches("refused ").count(), 3, "{run:?}");
    assert!(
        !run.stdout.contains("ESCAPED") && run.stdout.contains("channel open"),
        "{run:?}"
    );
    meet.held("code mode", &format!("{run:?}"));
}

/// `iris mcp serve` (stdio, driven by the Python MCP SDK's client): a served
/// `exec_command` runs in the agent's sandbox.
#[test]
fn a_served_exec_command_runs_in_the_sandbox() {
    let meet = Meet::new(
        "tools:\n  builtin: [exec.command]\npermissions: {execute_mode: allow}\n$SANDBOX",
        &[],
    );
    let script = json!({
        "stdio": {
            "command": env!("CARGO_BIN_EXE_iris"),
            "args": ["--config", meet.ws.join("iris.yaml"), "mcp", "serve"],
            "cwd": meet.ws,
            "env": {"HOME": super::user_home(), "XDG_CONFIG_HOME": super::user_home().join("config")},
        },
        "mode": "auto",
        "elicit": null,
        "steps": [{"op": "call", "name": "exec_command", "args": {"command": meet.fill("$ATTEMPT")}}],
    });
    let out = std::process::Command::new(super::mcp::python())
        .arg(
            Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("../iris-mcp/tests/fixtures/mcp/serve_client.py"),
        )
        .arg(script.to_string())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let result: Value = serde_json::from_str(stdout.trim()).unwrap();
    let texts = result["results"][0]["texts"].to_string();
    assert!(texts.contains("Read-only file system"), "{result}");
    meet.held("iris mcp serve", &stdout);
}
