//! `endpoint`: which URLs may carry a credential, as a table.

use iris_tools_core::endpoint::{is_loopback_host, sends_secrets_safely};

#[test]
fn which_urls_may_carry_secrets() {
    let table: &[(&str, bool)] = &[
        // https goes anywhere.
        ("https://api.example.com/v1/", true),
        ("HTTPS://api.example.com", true),
        ("https://user:pw@api.example.com/", true),
        // Plain http only to this machine.
        ("http://localhost/", true),
        ("http://LocalHost:8080/v1", true),
        ("http://127.0.0.1:11434/v1/", true),
        ("http://127.255.0.9", true),
        ("http://[::1]:8080/", true),
        ("http://[::1]", true),
        ("http://localhost?x=1", true),
        ("http://localhost\\path", true),
        ("http://api.example.com/", false),
        ("http://128.0.0.1/", false),
        ("http://10.0.0.1/", false),
        ("http://[::2]/", false),
        // A user part hides the real host: refused whatever it says.
        ("http://127.0.0.1@evil.example/", false),
        ("http://localhost:80@evil.example/", false),
        ("http://user:pw@localhost/", false),
        ("http://evil.example#@localhost/", false),
        ("http://evil.example/@localhost", false),
        // Names that only start or end like localhost.
        ("http://localhost.evil.example/", false),
        ("http://localhost./", false),
        ("http://127.0.0.1.evil.example/", false),
        ("http://local\thost/", false),
        // Spellings a URL parser may read as another address.
        ("http://0127.0.0.1/", false),
        ("http://2130706433/", false),
        ("http://[::ffff:127.0.0.1]/", false),
        ("http://[127.0.0.1]/", false),
        ("http://[::1]x/", false),
        ("http://[::1/", false),
        // Ports are digits.
        ("http://localhost:80x/", false),
        ("http://localhost:/", true),
        // Other schemes and non-URLs.
        ("ftp://localhost/", false),
        ("http:localhost", false),
        ("localhost:8080", false),
        ("", false),
    ];
    let wrong: Vec<String> = table
        .iter()
        .filter(|(url, want)| sends_secrets_safely(url) != *want)
        .map(|(url, want)| format!("{url:?}: want {want}"))
        .collect();
    assert!(wrong.is_empty(), "{wrong:#?}");
}

#[test]
fn loopback_hosts() {
    for host in [
        "localhost",
        "LOCALHOST",
        "127.0.0.1",
        "127.1.2.3",
        "::1",
        "[::1]",
    ] {
        assert!(is_loopback_host(host), "{host}");
    }
    for host in [
        "",
        "localhost.",
        "127.0.0.1.nip.io",
        "0.0.0.0",
        "[127.0.0.1]",
        "::ffff:127.0.0.1",
        "example.com",
    ] {
        assert!(!is_loopback_host(host), "{host}");
    }
}
