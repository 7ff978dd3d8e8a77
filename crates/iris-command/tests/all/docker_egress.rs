//! `network: {allow: …}` in Docker mode, against the real engine: the container sits on
//! an internal Docker network with no route out, and its only way to anything is the
//! egress proxy on that network's gateway address, which admits the listed domains
//! only. The allowed domain is a test HTTP server on 127.0.0.1 (the proxy resolves the
//! test names to loopback); the image has Python's `socket` but no HTTP client, so the
//! command speaks proxy HTTP by hand.

use std::net::Ipv4Addr;

use iris_command::{
    CommandConfig, CommandOutcome, CommandRequest, CommandScope, CommandService, DockerConfig,
    NetworkAccess, SandboxPolicy,
};

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

/// A Python program that GETs `http://<host>:<port>/` through `$HTTP_PROXY` and prints
/// the status line and the body.
fn get_through_proxy(host: &str, port: u16) -> String {
    format!(
        r#"import os, socket
proxy = os.environ["HTTP_PROXY"].removeprefix("http://")
addr, proxy_port = proxy.rsplit(":", 1)
s = socket.create_connection((addr, int(proxy_port)), 10)
s.sendall(b"GET http://{host}:{port}/ HTTP/1.1\r\nHost: {host}:{port}\r\n\r\n")
data = b""
while True:
    chunk = s.recv(4096)
    if not chunk:
        break
    data += chunk
head, _, body = data.decode().partition("\r\n\r\n")
print(head.splitlines()[0])
print(body.strip())
"#
    )
}

async fn run(service: &CommandService, request: CommandRequest) -> CommandOutcome {
    service
        .execute(&CommandScope::new("run-egress", "s"), request)
        .await
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn docker_allow_reaches_listed_domains_through_the_proxy_only() {
    let port = http_server().await;
    let dir = tempfile::tempdir().unwrap();
    let policy = SandboxPolicy {
        network: NetworkAccess::Allow(vec!["allowed.test".into()]),
        ..SandboxPolicy::default()
    };
    let config = CommandConfig::docker(DockerConfig::default()).with_sandbox(policy);
    let service = CommandService::new(config, dir.path())
        .unwrap()
        .with_egress_loopback_override("allowed.test", Ipv4Addr::LOCALHOST.into())
        .with_egress_loopback_override("other.test", Ipv4Addr::LOCALHOST.into());
    service.prepare().await.unwrap();

    let allowed = run(
        &service,
        CommandRequest::python("c1", get_through_proxy("allowed.test", port), "."),
    )
    .await;
    assert!(allowed.success(), "{allowed:?}");
    assert_eq!(
        allowed.stdout,
        format!("HTTP/1.1 200 OK\nhello from allowed.test:{port}\n"),
        "{allowed:?}"
    );
    let other = run(
        &service,
        CommandRequest::python("c2", get_through_proxy("other.test", port), "."),
    )
    .await;
    assert!(other.stdout.starts_with("HTTP/1.1 403"), "{other:?}");
    assert!(!other.stdout.contains("hello from"), "{other:?}");
    // Each call has a proxy of its own: the refusal is in that call's result only, as
    // natively.
    let refusals =
        |outcome: &CommandOutcome| outcome.sandbox.as_ref().unwrap().proxy_refusals.clone();
    assert_eq!(refusals(&other), ["other.test"], "{other:?}");
    assert!(refusals(&allowed).is_empty(), "{allowed:?}");
    let data = iris_command::outcome_result(&other).data;
    assert_eq!(
        data["sandbox"]["proxy_refusals"],
        serde_json::json!(["other.test"])
    );
    assert_eq!(
        data["sandbox"]["network"],
        serde_json::json!({"allow": ["allowed.test"]})
    );

    // The container's only network is an internal one (the engine drops what would
    // leave it; nothing is sent anywhere to check that): one interface besides lo.
    let interfaces = run(
        &service,
        CommandRequest::shell("c3", "ls /sys/class/net | sort | tr '\\n' ' '", "."),
    )
    .await;
    assert_eq!(interfaces.stdout, "eth0 lo ", "{interfaces:?}");
    let inspect = |args: &[&str]| {
        let out = std::process::Command::new("docker")
            .args(args)
            .output()
            .unwrap();
        assert!(out.status.success(), "docker {args:?}");
        String::from_utf8(out.stdout).unwrap().trim().to_owned()
    };
    let container = service.docker_container_id().unwrap();
    let attached = inspect(&[
        "inspect",
        "--format",
        "{{range $name, $_ := .NetworkSettings.Networks}}{{$name}} {{end}}",
        &container,
    ]);
    let names: Vec<&str> = attached.split_whitespace().collect();
    assert_eq!(names.len(), 1, "{attached}");
    assert!(names[0].starts_with("iris-egress-"), "{attached}");
    assert_eq!(
        inspect(&["network", "inspect", "--format", "{{.Internal}}", names[0]]),
        "true"
    );

    // The network goes with the container.
    let networks = || {
        let out = std::process::Command::new("docker")
            .args(["network", "ls", "--format", "{{.Name}}"])
            .output()
            .unwrap();
        String::from_utf8(out.stdout)
            .unwrap()
            .lines()
            .filter(|n| n.starts_with(&format!("iris-egress-{}-", std::process::id())))
            .count()
    };
    assert!(networks() >= 1);
    service.close().await.unwrap();
    assert_eq!(networks(), 0);
}

#[test]
fn docker_allow_refuses_a_bridge_beside_it() {
    let err = serde_json::from_value::<CommandConfig>(serde_json::json!({
        "mode": "docker",
        "docker": {"network": "bridge"},
        "sandbox": {"network": {"allow": ["pypi.org"]}}
    }))
    .unwrap_err();
    assert!(
        err.to_string()
            .contains("cannot be combined with docker.network: bridge"),
        "{err}"
    );
}
