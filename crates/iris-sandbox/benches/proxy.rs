//! The egress proxy's cost (run with `cargo bench -p iris-sandbox --bench proxy`): one
//! HTTP request to a server on 127.0.0.1, made directly and through an
//! [`EgressProxy`] that admits the server's name, both as a plain proxied `GET` (what
//! `HTTP_PROXY` gives an `http://` URL) and through a `CONNECT` tunnel (what
//! `HTTPS_PROXY` gives an `https://` URL; TLS itself would cost the same with or
//! without the proxy, so the tunnel carries plain HTTP here). Each request opens its
//! own connections (`Connection: close`), as a command's request does.
// Benchmark setup: a failed unwrap aborts the run with its message, which is wanted.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::net::{IpAddr, Ipv4Addr};
use std::sync::LazyLock;

use iris_sandbox::{EgressProxy, LoopbackOverrides, NetworkAccess};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::{TcpListener, TcpStream};

fn main() {
    divan::main();
}

/// A current-thread runtime running the server, the proxy and the client.
static RUNTIME: LazyLock<tokio::runtime::Runtime> = LazyLock::new(|| {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
});

/// The server's port and the proxy (kept for the whole run).
static SETUP: LazyLock<(u16, EgressProxy)> = LazyLock::new(|| {
    RUNTIME.block_on(async {
        let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).await.unwrap();
        let port = listener.local_addr().unwrap().port();
        tokio::spawn(async move {
            while let Ok((mut stream, _)) = listener.accept().await {
                tokio::spawn(async move {
                    let mut buf = [0u8; 4096];
                    let _ = stream.read(&mut buf).await;
                    let _ = stream
                        .write_all(
                            b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok",
                        )
                        .await;
                });
            }
        });
        let mut overrides = LoopbackOverrides::default();
        overrides.insert("allowed.test", IpAddr::from(Ipv4Addr::LOCALHOST));
        let proxy =
            EgressProxy::start(NetworkAccess::Allow(vec!["allowed.test".into()]), overrides)
                .await
                .unwrap();
        (port, proxy)
    })
});

/// Sends `request` on `stream` and reads the response to its end.
async fn exchange(stream: &mut TcpStream, request: &[u8]) -> Vec<u8> {
    stream.write_all(request).await.unwrap();
    let mut response = Vec::new();
    stream.read_to_end(&mut response).await.unwrap();
    assert!(
        response.ends_with(b"ok"),
        "{}",
        String::from_utf8_lossy(&response)
    );
    response
}

#[divan::bench]
fn direct() {
    let (port, _) = &*SETUP;
    RUNTIME.block_on(async {
        let mut stream = TcpStream::connect((Ipv4Addr::LOCALHOST, *port))
            .await
            .unwrap();
        exchange(&mut stream, b"GET / HTTP/1.1\r\nHost: allowed.test\r\n\r\n").await;
    });
}

#[divan::bench]
fn through_proxy_get() {
    let (port, proxy) = &*SETUP;
    RUNTIME.block_on(async {
        let mut stream = TcpStream::connect((Ipv4Addr::LOCALHOST, proxy.port()))
            .await
            .unwrap();
        let request = format!(
            "GET http://allowed.test:{port}/ HTTP/1.1\r\nHost: allowed.test:{port}\r\n\r\n"
        );
        exchange(&mut stream, request.as_bytes()).await;
    });
}

#[divan::bench]
fn through_proxy_connect_tunnel() {
    let (port, proxy) = &*SETUP;
    RUNTIME.block_on(async {
        let mut stream = TcpStream::connect((Ipv4Addr::LOCALHOST, proxy.port()))
            .await
            .unwrap();
        let connect =
            format!("CONNECT allowed.test:{port} HTTP/1.1\r\nHost: allowed.test:{port}\r\n\r\n");
        stream.write_all(connect.as_bytes()).await.unwrap();
        // The proxy's answer ends with an empty line; then the tunnel is open.
        let mut head = Vec::new();
        let mut byte = [0u8; 1];
        while !head.ends_with(b"\r\n\r\n") {
            stream.read_exact(&mut byte).await.unwrap();
            head.push(byte[0]);
        }
        assert!(
            head.starts_with(b"HTTP/1.1 200"),
            "{}",
            String::from_utf8_lossy(&head)
        );
        exchange(&mut stream, b"GET / HTTP/1.1\r\nHost: allowed.test\r\n\r\n").await;
    });
}
