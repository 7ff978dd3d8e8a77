//! [`EgressProxy`]: the only way out of a `network: {allow: […]}` sandbox.
//!
//! An HTTP proxy on 127.0.0.1 (an ephemeral port, one proxy per call, so its refusals
//! belong to that call) that understands `CONNECT host:port` (HTTPS and any TLS) and
//! absolute-form HTTP requests (`GET http://host/path`). It admits a request only when
//! [`NetworkAccess::admits`] its host, resolves the name itself (the sandbox has no
//! DNS), and logs every decision with `tracing` (target `iris_sandbox::proxy`). A
//! refusal is answered `403` and remembered by host name for the call's result.
//! Forwarded plain-HTTP requests carry `Connection: close`, so one connection cannot
//! reach a second host.

use std::collections::BTreeMap;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::{JoinHandle, JoinSet};

use crate::policy::NetworkAccess;

/// The largest request head the proxy reads.
const MAX_HEAD: usize = 16 * 1024;
/// How long reading a head or connecting upstream may take.
const STEP_TIMEOUT: Duration = Duration::from_secs(15);
/// How many refused host names one call keeps.
const MAX_REFUSALS: usize = 64;

/// Names the proxy resolves to fixed loopback addresses instead of asking DNS: a hook
/// for tests that serve an "allowed domain" on 127.0.0.1. Only loopback addresses are
/// accepted.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LoopbackOverrides(BTreeMap<String, IpAddr>);

impl LoopbackOverrides {
    /// Resolves `host` to `ip`; `false` (and nothing recorded) when `ip` is not a
    /// loopback address.
    pub fn insert(&mut self, host: impl Into<String>, ip: IpAddr) -> bool {
        if !ip.is_loopback() {
            return false;
        }
        self.0.insert(host.into().to_ascii_lowercase(), ip);
        true
    }
}

/// A running egress proxy; dropping it stops it and every connection it carries.
#[derive(Debug)]
pub struct EgressProxy {
    addr: IpAddr,
    port: u16,
    refusals: Arc<Mutex<Vec<String>>>,
    task: JoinHandle<()>,
}

impl Drop for EgressProxy {
    fn drop(&mut self) {
        self.task.abort();
    }
}

struct Shared {
    network: NetworkAccess,
    overrides: LoopbackOverrides,
    refusals: Arc<Mutex<Vec<String>>>,
}

impl EgressProxy {
    /// Starts a proxy on 127.0.0.1 that admits what `network` admits.
    pub async fn start(
        network: NetworkAccess,
        overrides: LoopbackOverrides,
    ) -> std::io::Result<Self> {
        Self::start_on(Ipv4Addr::LOCALHOST.into(), network, overrides).await
    }

    /// Starts a proxy listening on `addr` (an ephemeral port): Docker mode puts it on
    /// the gateway address of the container's internal network, the one address the
    /// container can reach.
    pub async fn start_on(
        addr: IpAddr,
        network: NetworkAccess,
        overrides: LoopbackOverrides,
    ) -> std::io::Result<Self> {
        let listener = TcpListener::bind(SocketAddr::from((addr, 0))).await?;
        let port = listener.local_addr()?.port();
        let refusals = Arc::new(Mutex::new(Vec::new()));
        let shared = Arc::new(Shared {
            network,
            overrides,
            refusals: refusals.clone(),
        });
        let task = tokio::spawn(async move {
            let mut connections = JoinSet::new();
            loop {
                tokio::select! {
                    accepted = listener.accept() => {
                        if let Ok((stream, _)) = accepted {
                            connections.spawn(serve(stream, shared.clone()));
                        }
                    }
                    Some(_) = connections.join_next(), if !connections.is_empty() => {}
                }
            }
        });
        Ok(Self {
            addr,
            port,
            refusals,
            task,
        })
    }

    /// The proxy's port (on 127.0.0.1 unless started with [`EgressProxy::start_on`]).
    pub fn port(&self) -> u16 {
        self.port
    }

    /// The proxy's URL, as sandboxed processes get it in `HTTP_PROXY` and its kin.
    pub fn url(&self) -> String {
        format!("http://{}", SocketAddr::from((self.addr, self.port)))
    }

    /// The host names refused so far, in order, each once.
    pub fn refusals(&self) -> Vec<String> {
        self.refusals.lock().map(|r| r.clone()).unwrap_or_default()
    }
}

/// One client connection: read the head, decide, tunnel or forward.
async fn serve(mut client: TcpStream, shared: Arc<Shared>) {
    let Ok(Ok((head, rest))) = tokio::time::timeout(STEP_TIMEOUT, read_head(&mut client)).await
    else {
        return;
    };
    let Some(request) = Request::parse(&head) else {
        let _ = respond(&mut client, "400 Bad Request", "not a proxy request").await;
        return;
    };
    let allowed = shared.network.admits(&request.host);
    tracing::info!(target: "iris_sandbox::proxy", host = %request.host, port = request.port, allowed, "egress decision");
    if !allowed {
        if let Ok(mut refusals) = shared.refusals.lock()
            && refusals.len() < MAX_REFUSALS
            && !refusals.contains(&request.host)
        {
            refusals.push(request.host.clone());
        }
        let _ = respond(
            &mut client,
            "403 Forbidden",
            &format!("the Iris sandbox does not allow `{}`", request.host),
        )
        .await;
        return;
    }
    let upstream = match tokio::time::timeout(STEP_TIMEOUT, connect(&shared, &request)).await {
        Ok(Ok(stream)) => stream,
        _ => {
            let _ = respond(&mut client, "502 Bad Gateway", "cannot reach the host").await;
            return;
        }
    };
    let mut upstream = upstream;
    let sent = match &request.forward {
        None => client
            .write_all(b"HTTP/1.1 200 Connection Established\r\n\r\n")
            .await
            .and(upstream.write_all(&rest).await),
        Some(head) => {
            let mut bytes = head.clone().into_bytes();
            bytes.extend_from_slice(&rest);
            upstream.write_all(&bytes).await
        }
    };
    if sent.is_ok() {
        let _ = tokio::io::copy_bidirectional(&mut client, &mut upstream).await;
    }
}

async fn connect(shared: &Shared, request: &Request) -> std::io::Result<TcpStream> {
    if let Some(ip) = shared.overrides.0.get(&request.host) {
        return TcpStream::connect((*ip, request.port)).await;
    }
    let mut last = std::io::Error::other("the name resolved to no address");
    for addr in tokio::net::lookup_host((request.host.as_str(), request.port)).await? {
        match TcpStream::connect(addr).await {
            Ok(stream) => return Ok(stream),
            Err(e) => last = e,
        }
    }
    Err(last)
}

async fn respond(client: &mut TcpStream, status: &str, body: &str) -> std::io::Result<()> {
    let text = format!(
        "HTTP/1.1 {status}\r\nContent-Type: text/plain\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}\n",
        body.len() + 1
    );
    client.write_all(text.as_bytes()).await
}

/// Reads up to the end of the head; returns the head and the bytes read past it.
async fn read_head(client: &mut TcpStream) -> std::io::Result<(String, Vec<u8>)> {
    let mut buf = Vec::with_capacity(1024);
    let mut chunk = [0u8; 4096];
    loop {
        let n = client.read(&mut chunk).await?;
        if n == 0 {
            return Err(std::io::ErrorKind::UnexpectedEof.into());
        }
        buf.extend_from_slice(&chunk[..n]);
        if let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            let rest = buf.split_off(end + 4);
            return Ok((String::from_utf8_lossy(&buf).into_owned(), rest));
        }
        if buf.len() > MAX_HEAD {
            return Err(std::io::ErrorKind::InvalidData.into());
        }
    }
}

/// A parsed proxy request.
#[derive(Debug, PartialEq, Eq)]
struct Request {
    host: String,
    port: u16,
    /// For plain HTTP: the head to send upstream (origin-form, `Connection: close`);
    /// `None` for `CONNECT`.
    forward: Option<String>,
}

impl Request {
    fn parse(head: &str) -> Option<Self> {
        let mut lines = head.split("\r\n");
        let mut first = lines.next()?.split(' ');
        let (method, target, version) = (first.next()?, first.next()?, first.next()?);
        if method.eq_ignore_ascii_case("CONNECT") {
            let (host, port) = split_host_port(target, None)?;
            return Some(Self {
                host,
                port,
                forward: None,
            });
        }
        let rest = target.strip_prefix("http://")?;
        let (authority, path) = match rest.find('/') {
            Some(i) => (&rest[..i], &rest[i..]),
            None => (rest, "/"),
        };
        let (host, port) = split_host_port(authority, Some(80))?;
        let mut forward = format!("{method} {path} {version}\r\n");
        for line in lines.filter(|l| !l.is_empty()) {
            let name = line.split(':').next().unwrap_or("").trim();
            if [
                "connection",
                "proxy-connection",
                "proxy-authorization",
                "keep-alive",
            ]
            .iter()
            .any(|h| name.eq_ignore_ascii_case(h))
            {
                continue;
            }
            forward.push_str(line);
            forward.push_str("\r\n");
        }
        forward.push_str("Connection: close\r\n\r\n");
        Some(Self {
            host,
            port,
            forward: Some(forward),
        })
    }
}

/// `host:port` (or `[v6]:port`); the port may default.
fn split_host_port(authority: &str, default: Option<u16>) -> Option<(String, u16)> {
    let authority = authority.rsplit('@').next()?;
    let (host, port) = if let Some(v6) = authority.strip_prefix('[') {
        let (host, after) = v6.split_once(']')?;
        (host, after.strip_prefix(':'))
    } else {
        match authority.rsplit_once(':') {
            Some((h, p)) => (h, Some(p)),
            None => (authority, None),
        }
    };
    let port = match port {
        Some(p) => p.parse().ok()?,
        None => default?,
    };
    (!host.is_empty()).then(|| (host.trim_end_matches('.').to_ascii_lowercase(), port))
}

#[cfg(test)]
// Test code: a failed expect is a failed test with its message.
#[allow(clippy::expect_used)]
mod tests {
    use super::*;

    #[test]
    fn requests_parse() {
        let connect = Request::parse("CONNECT Example.com:443 HTTP/1.1\r\nHost: x\r\n\r\n");
        assert_eq!(
            connect,
            Some(Request {
                host: "example.com".into(),
                port: 443,
                forward: None
            })
        );
        let get = Request::parse(
            "GET http://a.test:8080/p?q HTTP/1.1\r\nHost: a.test\r\nProxy-Connection: keep-alive\r\n\r\n",
        )
        .expect("parses");
        assert_eq!((get.host.as_str(), get.port), ("a.test", 8080));
        assert_eq!(
            get.forward.as_deref(),
            Some("GET /p?q HTTP/1.1\r\nHost: a.test\r\nConnection: close\r\n\r\n")
        );
        assert!(Request::parse("GET /relative HTTP/1.1\r\n\r\n").is_none());
        assert_eq!(
            split_host_port("[::1]:443", None),
            Some(("::1".into(), 443))
        );
    }

    #[test]
    fn overrides_are_loopback_only() {
        let mut o = LoopbackOverrides::default();
        assert!(o.insert("a.test", IpAddr::from([127, 0, 0, 1])));
        assert!(!o.insert("b.test", IpAddr::from([10, 0, 0, 1])));
    }
}
