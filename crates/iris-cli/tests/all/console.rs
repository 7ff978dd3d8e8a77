//! The approval diff and the web console (issue 31), against real parts: `iris run`'s
//! approval prompt on a pseudo-terminal shows the diff of an `edit_file`; `iris serve`
//! (the real binary) serves the console to Debian's headless `chromium`, driven over
//! WebDriver by `chromium-driver` (both installed by `.ci/setup`), every address on
//! 127.0.0.1. In the browser: the runs list, the inbox with the diff, a timeline where a
//! tool result holding `<script>` is text, Approve, the run completing live over SSE and
//! the file changed on disk, and no error in the browser's console; a relayed
//! subagent's approval with its diff; an artifact downloaded; the list and the inbox
//! following `GET /v1/events`.
//!
//! With `IRIS_CONSOLE_SCREENSHOTS=DIR` the browser tests save `console-runs.png`,
//! `console-inbox.png` and `console-timeline.png` there, and `console_input.rs`
//! `console-form.png` (docs/ holds the ones the README and docs/console.md show).

use std::future::Future;
use std::net::{Ipv4Addr, SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use fantoccini::wd::WebDriverCompatibleCommand;
use fantoccini::{Client, ClientBuilder, Locator};
use serde_json::{Value, json};

use super::run::Pty;
use super::signals::{Spawned, spawn};

/// The file the agent edits: its title is a draft, and its body is markup a careless
/// console would run.
const NOTES: &str = "title: draft\n<script>window.__pwned = 1</script>\n";

/// A scripted agent that reads `notes.txt` (no approval) and then edits its title
/// (`edit_file` waits for approval), then answers.
const EDIT_YAML: &str = "tools:\n  builtin: [file.read, file.edit]\nmodel:\n  provider: scripted\n  \
    script:\n    - text: Reading the notes.\n      tool_calls: [{name: read_file, arguments: \
    {file_path: notes.txt}}]\n    - expect_tool_results: 1\n      text: Finalising the title.\n      \
    tool_calls: [{name: edit_file, arguments: {file_path: notes.txt, old_string: 'title: draft', \
    new_string: 'title: final'}}]\n    - {expect_tool_results: 1, text: The notes are final.}\n";

/// The diff both the terminal and the console show for the edit.
const EDIT_DIFF: &str = "--- a/notes.txt\n+++ b/notes.txt\n@@ -1,2 +1,2 @@\n-title: draft\n\
    +title: final\n <script>window.__pwned = 1</script>\n";

/// A workspace with `notes.txt` and the agent.
fn workspace() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("notes.txt"), NOTES).unwrap();
    std::fs::write(dir.path().join("iris.yaml"), EDIT_YAML).unwrap();
    dir
}

/// `iris run` on a terminal asks the edit's approval with its diff (not the raw JSON),
/// and a `y` writes the file.
#[test]
fn the_terminal_approval_prompt_shows_the_diff() {
    let dir = workspace();
    let mut pty = Pty::open();
    let child = pty.spawn_iris(
        dir.path(),
        &["--config", "iris.yaml", "run", "Finalise the notes"],
        &[],
    );
    pty.until("Run it? [y/N] ");
    let asked = pty.seen_text().to_owned();
    assert!(
        asked.contains("iris: edit_file (call_2_1) needs approval: "),
        "{asked}"
    );
    for line in EDIT_DIFF.lines() {
        assert!(asked.contains(&format!("  {line}")), "{line:?} in {asked}");
    }
    assert!(!asked.contains("arguments: {"), "{asked}");
    pty.type_line("y\n");
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", pty.rest());
    assert_eq!(
        std::fs::read_to_string(dir.path().join("notes.txt")).unwrap(),
        NOTES.replace("title: draft", "title: final")
    );
}

/// The diff is the file's own text: its terminal controls are escaped like the rest
/// of stderr, and `n` denies (the file stays as it was).
#[test]
fn the_terminal_diff_escapes_the_files_controls() {
    let dir = workspace();
    let notes = "title: draft\ncolor: \x1b[31mred\x1b]0;pwned\x07\n";
    std::fs::write(dir.path().join("notes.txt"), notes).unwrap();
    let mut pty = Pty::open();
    let child = pty.spawn_iris(
        dir.path(),
        &["--config", "iris.yaml", "run", "Finalise the notes"],
        &[],
    );
    pty.until("Run it? [y/N] ");
    let asked = pty.seen_text().to_owned();
    for fragment in [
        "  -title: draft",
        "  +title: final",
        "   color: \\x1b[31mred\\x1b]0;pwned",
    ] {
        assert!(asked.contains(fragment), "{fragment:?} in {asked:?}");
    }
    assert!(!asked.contains("\x1b[31m"), "{asked:?}");
    assert!(!asked.contains('\x07'), "{asked:?}");
    pty.type_line("n\n");
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", pty.rest());
    assert_eq!(
        std::fs::read_to_string(dir.path().join("notes.txt")).unwrap(),
        notes
    );
}

/// A free port on 127.0.0.1 (bound, then released for the driver to take).
fn free_port() -> u16 {
    TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// `chromedriver` on 127.0.0.1, killed when dropped.
struct Driver {
    child: Child,
    url: String,
}

impl Drop for Driver {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Driver {
    fn start() -> Self {
        let port = free_port();
        let child = Command::new("chromedriver")
            .arg(format!("--port={port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| {
                panic!("chromedriver (Debian's chromium-driver, installed by .ci/setup): {e}")
            });
        let address = SocketAddr::from((Ipv4Addr::LOCALHOST, port));
        let deadline = Instant::now() + Duration::from_secs(30);
        while TcpStream::connect(address).is_err() {
            assert!(Instant::now() < deadline, "chromedriver did not listen");
            std::thread::sleep(Duration::from_millis(50));
        }
        Self {
            child,
            url: format!("http://127.0.0.1:{port}/"),
        }
    }
}

/// The browser's console log (a WebDriver extension chromedriver serves; fantoccini has
/// no method for it).
#[derive(Debug)]
struct BrowserLog;

impl WebDriverCompatibleCommand for BrowserLog {
    fn endpoint(
        &self,
        base_url: &url::Url,
        session_id: Option<&str>,
    ) -> Result<url::Url, url::ParseError> {
        base_url.join(&format!(
            "session/{}/se/log",
            session_id.unwrap_or_default()
        ))
    }

    fn method_and_body(&self, _: &url::Url) -> (http::Method, Option<String>) {
        (
            http::Method::POST,
            Some(json!({"type": "browser"}).to_string()),
        )
    }
}

/// `iris serve` in `dir` on a free port of 127.0.0.1, with `args` after it; its base URL.
pub(super) fn serve(dir: &Path, args: &[&str], env: &[(&str, &str)]) -> (Spawned, String) {
    let mut all = vec!["--config", "iris.yaml", "serve", "--listen", "127.0.0.1:0"];
    all.extend_from_slice(args);
    let served = spawn(dir, &all, env);
    let lines = served.stderr_until("iris: serving ");
    let line = lines.last().unwrap();
    let url = line
        .split("on ")
        .nth(1)
        .and_then(|rest| rest.split("/v1").next())
        .unwrap_or_else(|| panic!("{line}"))
        .trim_end_matches('/')
        .to_owned();
    (served, url)
}

pub(super) fn http() -> reqwest::blocking::Client {
    reqwest::blocking::Client::builder()
        .timeout(Duration::from_secs(30))
        .build()
        .unwrap()
}

/// Starts a run of the default agent; its id.
pub(super) fn start_run(base: &str, token: &str, input: &str) -> String {
    let started: Value = http()
        .post(format!("{base}/v1/runs"))
        .bearer_auth(token)
        .json(&json!({"agent": "default", "input": input}))
        .send()
        .unwrap()
        .json()
        .unwrap();
    started["run_id"].as_str().unwrap().to_owned()
}

/// The run, once `done` holds of it (polled; the deadline only stops a hung test).
pub(super) fn run_until(
    base: &str,
    token: &str,
    run_id: &str,
    done: impl Fn(&Value) -> bool,
) -> Value {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let view: Value = http()
            .get(format!("{base}/v1/runs/{run_id}"))
            .bearer_auth(token)
            .send()
            .unwrap()
            .json()
            .unwrap();
        if done(&view) {
            return view;
        }
        assert!(Instant::now() < deadline, "{view}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Where screenshots go, when asked for.
pub(super) fn screenshot_dir() -> Option<PathBuf> {
    std::env::var_os("IRIS_CONSOLE_SCREENSHOTS").map(PathBuf::from)
}

pub(super) async fn screenshot(browser: &Client, name: &str) {
    if let Some(dir) = screenshot_dir() {
        let png = browser.screenshot().await.unwrap();
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join(name), png).unwrap();
    }
}

/// The element `css` matches, once there is one.
pub(super) async fn wait_for(browser: &Client, css: &str) -> fantoccini::elements::Element {
    browser
        .wait()
        .at_most(Duration::from_secs(30))
        .for_element(Locator::Css(css))
        .await
        .unwrap_or_else(|e| panic!("{css}: {e}"))
}

/// Opens `url` in the tab.
pub(super) async fn show(browser: &Client, url: &str) -> Result<(), String> {
    browser.goto(url).await.map_err(|e| format!("{url}: {e}"))
}

/// Clicks the element `css` matches now.
pub(super) async fn click(browser: &Client, css: &str) -> Result<(), String> {
    browser
        .find(Locator::Css(css))
        .await
        .map_err(|e| format!("{css}: {e}"))?
        .click()
        .await
        .map_err(|e| format!("{css}: {e}"))
}

/// Waits for the run's end in the timeline (`css`) and checks it says `expected`.
pub(super) async fn ended_with(browser: &Client, css: &str, expected: &str) -> Result<(), String> {
    let end = wait_for(browser, css).await;
    let text = end.text().await.map_err(|e| e.to_string())?;
    if text.contains(expected) {
        Ok(())
    } else {
        Err(format!("the run's end {text:?}, not {expected:?}"))
    }
}

/// A JavaScript expression's value in the page.
pub(super) async fn eval(browser: &Client, expression: &str) -> Value {
    browser
        .execute(&format!("return {expression};"), vec![])
        .await
        .unwrap()
}

/// The whole story in a real browser: the run waits on the edit; the list shows it, the
/// inbox shows the diff, the run's timeline shows the read's `<script>` as text; Approve
/// lets the run complete (seen live) and the file changes; the console has no error.
#[test]
fn the_console_approves_an_edit_in_a_real_browser() {
    let dir = workspace();
    let (_served, base) = serve(dir.path(), &[], &[]);
    // Loopback without a token: an empty bearer is not asked for.
    let run_id = start_run(&base, "", "Finalise the notes");
    let waiting = run_until(&base, "", &run_id, |v| v["status"] == "waiting");
    // The API gives the diff with the pending approval.
    assert_eq!(
        waiting["interaction"]["tool_name"], "edit_file",
        "{waiting}"
    );
    assert_eq!(waiting["interaction"]["diff"], EDIT_DIFF, "{waiting}");

    // The console's files: no token on loopback, a policy with no inline script.
    for (path, kind) in [
        ("/", "text/html"),
        ("/console/app.js", "text/javascript"),
        ("/console/app.css", "text/css"),
    ] {
        let response = http().get(format!("{base}{path}")).send().unwrap();
        assert_eq!(response.status().as_u16(), 200, "{path}");
        let header = |name: &str| response.headers()[name].to_str().unwrap().to_owned();
        assert!(header("content-type").starts_with(kind), "{path}");
        let policy = header("content-security-policy");
        assert!(policy.contains("script-src 'self';"), "{policy}");
        assert!(!policy.contains("unsafe-inline"), "{policy}");
        assert_eq!(header("x-content-type-options"), "nosniff");
    }

    let errors = in_browser(|browser| Box::pin(browse(browser, &base, &run_id, dir.path())));
    assert!(errors.is_empty(), "browser console errors: {errors:?}");
}

/// What a browser session does; an `Err` says what went wrong.
pub(super) type Steps<'a> = Pin<Box<dyn Future<Output = Result<(), String>> + 'a>>;

/// Runs `steps` in a fresh headless chromium (closed before a failure is reported);
/// returns the SEVERE entries of the browser's console log.
pub(super) fn in_browser<'s>(steps: impl FnOnce(Client) -> Steps<'s>) -> Vec<Value> {
    in_browser_saving_to(None, steps)
}

/// [`in_browser`], the browser saving downloads in `downloads` when given.
fn in_browser_saving_to<'s>(
    downloads: Option<&Path>,
    steps: impl FnOnce(Client) -> Steps<'s>,
) -> Vec<Value> {
    let driver = Driver::start();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let mut caps = serde_json::Map::new();
        caps.insert(
            "goog:chromeOptions".into(),
            json!({
                "binary": "/usr/bin/chromium",
                "args": ["--headless=new", "--no-sandbox", "--disable-gpu",
                         "--disable-dev-shm-usage", "--window-size=1280,900",
                         "--no-first-run", "--no-default-browser-check"],
                "prefs": downloads.map(|dir| json!({
                    "download.default_directory": dir,
                    "download.prompt_for_download": false,
                })).unwrap_or_else(|| json!({})),
            }),
        );
        caps.insert("goog:loggingPrefs".into(), json!({"browser": "ALL"}));
        let connector = hyper_util::client::legacy::connect::HttpConnector::new();
        let browser = ClientBuilder::new(connector)
            .capabilities(caps)
            .connect(&driver.url)
            .await
            .unwrap();
        let outcome = steps(browser.clone()).await;
        let log = browser.issue_cmd(BrowserLog).await;
        let _ = browser.close().await;
        outcome.unwrap();
        log.unwrap()
            .as_array()
            .unwrap()
            .iter()
            .filter(|e| e["level"] == "SEVERE")
            .cloned()
            .collect()
    })
}

/// The browser's part; an `Err` carries what went wrong, so the session is closed first.
async fn browse(browser: Client, base: &str, run_id: &str, dir: &Path) -> Result<(), String> {
    let browser = &browser;
    // The runs list.
    browser
        .goto(&format!("{base}/"))
        .await
        .map_err(|e| e.to_string())?;
    let row = format!("tr[data-run=\"{run_id}\"]");
    wait_for(browser, &row).await;
    // Read in the page: the list is drawn again when its event stream (re)connects.
    let row_text = eval(
        browser,
        &format!("document.querySelector('{row}').innerText"),
    )
    .await;
    let row_text = row_text.as_str().unwrap_or_default();
    for fragment in [run_id, "waiting", "default", "in /", "edit_file"] {
        if !row_text.contains(fragment) {
            return Err(format!("{fragment:?} not in the runs row {row_text:?}"));
        }
    }
    screenshot(browser, "console-runs.png").await;

    // The inbox: the pending edit with its diff, one span per line.
    browser
        .goto(&format!("{base}/#/inbox"))
        .await
        .map_err(|e| e.to_string())?;
    let diff = wait_for(browser, "#inbox-list pre.diff").await;
    let shown = diff.text().await.map_err(|e| e.to_string())?;
    if shown.trim_end() != EDIT_DIFF.trim_end() {
        return Err(format!("the inbox diff {shown:?}"));
    }
    let removed = wait_for(browser, "#inbox-list pre.diff span.del").await;
    let added = wait_for(browser, "#inbox-list pre.diff span.add").await;
    assert_eq!(removed.text().await.unwrap(), "-title: draft");
    assert_eq!(added.text().await.unwrap(), "+title: final");
    screenshot(browser, "console-inbox.png").await;

    // The run: its timeline, then Approve from its pending card.
    browser
        .goto(&format!("{base}/#/runs/{run_id}"))
        .await
        .map_err(|e| e.to_string())?;
    let read = wait_for(browser, "#timeline li.call .result pre").await;
    let result = read.text().await.map_err(|e| e.to_string())?;
    if !result.contains("<script>window.__pwned = 1</script>") {
        return Err(format!("the read's result {result:?}"));
    }
    // Text, not markup: no script element but the console's own, nothing ran.
    assert_eq!(eval(browser, "document.scripts.length").await, 1);
    assert_eq!(eval(browser, "typeof window.__pwned").await, "undefined");
    wait_for(browser, "#timeline li.call .badge.waiting").await;
    let approve = wait_for(browser, "#run-pending .card button.primary").await;
    approve.click().await.map_err(|e| e.to_string())?;

    // Live over the same SSE stream: the edit's result and the run's end arrive.
    ended_with(browser, "#timeline li.end", "The notes are final.").await?;
    wait_for(browser, "#run-summary .badge.completed").await;
    // The edit resumed in its own entry: no call is left waiting.
    let left = browser
        .find_all(Locator::Css("#timeline .badge.waiting"))
        .await
        .map_err(|e| e.to_string())?;
    assert_eq!(left.len(), 0, "a call still shows waiting");
    if screenshot_dir().is_some() {
        // Tall enough for the whole timeline.
        browser
            .set_window_size(1280, 1500)
            .await
            .map_err(|e| e.to_string())?;
    }
    screenshot(browser, "console-timeline.png").await;
    let calls = browser
        .find_all(Locator::Css("#timeline li.call .badge.ok"))
        .await
        .map_err(|e| e.to_string())?;
    assert_eq!(calls.len(), 2, "both calls ended ok");
    assert_eq!(
        std::fs::read_to_string(dir.join("notes.txt")).unwrap(),
        NOTES.replace("title: draft", "title: final")
    );
    Ok(())
}

/// A scripted agent that asks which greeting to use, then answers.
const ASK_YAML: &str = "tools:\n  builtin: [human.ask]\nmodel:\n  provider: scripted\n  script:\n    \
    - text: Let me ask.\n      tool_calls: [{name: ask_question, arguments: {question: Which \
    greeting?, options: [hi, hello]}}]\n    - {expect_tool_results: 1, text: Greeting chosen.}\n";

/// The token of the server that needs one.
const TOKEN: &str = "console-test-token-7f3a";

/// A server that needs a token: the console asks for it when the API refuses, then
/// sends it (the event stream too); the inbox answers an `ask_question` with one of its
/// options and the run completes with that answer. The browser's only console errors
/// are the requests refused before the token was given.
#[test]
fn the_console_asks_for_a_token_and_answers_a_question() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("iris.yaml"), ASK_YAML).unwrap();
    let (_served, base) = serve(
        dir.path(),
        &["--token-env", "IRIS_CONSOLE_TOKEN"],
        &[("IRIS_CONSOLE_TOKEN", TOKEN)],
    );
    let refused = http().get(format!("{base}/v1/runs")).send().unwrap();
    assert_eq!(refused.status().as_u16(), 401);
    let run_id = start_run(&base, TOKEN, "Greet");
    run_until(&base, TOKEN, &run_id, |v| v["status"] == "waiting");

    let errors = in_browser(|browser| Box::pin(answer_question(browser, &base, &run_id)));
    let (refusals, others): (Vec<&Value>, Vec<&Value>) = errors
        .iter()
        .partition(|e| e["message"].as_str().unwrap_or("").contains("401"));
    assert!(others.is_empty(), "browser console errors: {others:?}");
    assert!(
        !refusals.is_empty(),
        "the console asked before any 401: {errors:?}"
    );
    let done = run_until(&base, TOKEN, &run_id, |v| v["status"] == "completed");
    assert_eq!(done["output"], "Greeting chosen.");
}

async fn answer_question(browser: Client, base: &str, run_id: &str) -> Result<(), String> {
    let browser = &browser;
    let failed = |e: fantoccini::error::CmdError| e.to_string();
    show(browser, &format!("{base}/#/inbox")).await?;
    let input = wait_for(browser, "#token-view:not([hidden]) #token-input").await;
    input.send_keys(TOKEN).await.map_err(failed)?;
    click(browser, "#token-form button[type=submit]").await?;
    let card = wait_for(browser, "#inbox-list .card").await;
    let text = card.text().await.map_err(failed)?;
    if !text.contains("Which greeting?") {
        return Err(format!("the question card {text:?}"));
    }
    let mut clicked = false;
    for button in browser
        .find_all(Locator::Css("#inbox-list .card button"))
        .await
        .map_err(failed)?
    {
        if button.text().await.map_err(failed)? == "hello" {
            button.click().await.map_err(failed)?;
            clicked = true;
            break;
        }
    }
    if !clicked {
        return Err("no `hello` option".into());
    }
    // The run's page follows its events with the token: the answer and the end.
    show(browser, &format!("{base}/#/runs/{run_id}")).await?;
    ended_with(browser, "#timeline li.end", "Greeting chosen.").await?;
    let result = wait_for(browser, "#timeline li.call .result pre").await;
    assert_eq!(result.text().await.map_err(failed)?, "hello");
    // The token is in no page text.
    let body = eval(browser, "document.body.innerText").await;
    assert!(!body.as_str().unwrap().contains(TOKEN));
    Ok(())
}

/// `examples/subagents` served: the lead delegates to a reader, then to a scribe whose
/// write waits for approval through the lead. The timeline nests each child's events
/// under the call that started it; the lead's pending card is the scribe's approval
/// with its diff (answered under the lead's interaction id), the inbox lists it once
/// (not the child run too), and Approve lets both finish and the file be written.
#[test]
fn the_console_nests_subagents_and_approves_a_childs_write() {
    let dir = super::subagent::example();
    let (_served, base) = serve(dir.path(), &[], &[]);
    let run_id = start_run(&base, "", "Summarize the notes");
    let waiting = run_until(&base, "", &run_id, |v| v["status"] == "waiting");
    assert_eq!(waiting["interaction"]["kind"], "subagent", "{waiting}");
    assert_eq!(waiting["interaction"]["inner"]["tool_name"], "write_file");
    assert_eq!(
        waiting["interaction"]["inner"]["diff"], SUMMARY_DIFF,
        "{waiting}"
    );

    let errors = in_browser(|browser| Box::pin(approve_through_parent(browser, &base, &run_id)));
    assert!(errors.is_empty(), "browser console errors: {errors:?}");
    let done = run_until(&base, "", &run_id, |v| v["status"] == "completed");
    assert_eq!(
        done["output"],
        "The reader found two tasks, and the scribe wrote them to notes/summary.md."
    );
    assert_eq!(
        std::fs::read_to_string(dir.path().join("notes/summary.md")).unwrap(),
        "Renew the TLS certificate; rotate the API keys.\n"
    );
}

/// The diff of the scribe's write: a new file in its workspace (`notes/`).
const SUMMARY_DIFF: &str = "--- /dev/null\n+++ b/summary.md\n@@ -0,0 +1 @@\n\
    +Renew the TLS certificate; rotate the API keys.\n";

async fn approve_through_parent(browser: Client, base: &str, run_id: &str) -> Result<(), String> {
    let browser = &browser;
    let failed = |e: fantoccini::error::CmdError| e.to_string();
    // The inbox: one card, the scribe's write.
    show(browser, &format!("{base}/#/inbox")).await?;
    wait_for(browser, "#inbox-list .card").await;
    let cards = browser
        .find_all(Locator::Css("#inbox-list .card"))
        .await
        .map_err(failed)?;
    if cards.len() != 1 {
        return Err(format!("{} inbox cards, not 1", cards.len()));
    }
    let text = cards[0].text().await.map_err(failed)?;
    for fragment in [
        "Asked by subagent scribe",
        "Approve write_file?",
        "summary.md",
    ] {
        if !text.contains(fragment) {
            return Err(format!("{fragment:?} not in the card {text:?}"));
        }
    }
    // The scribe's write as its diff against the file as it is now (none yet).
    let diff = wait_for(browser, "#inbox-list .card pre.diff").await;
    let shown = diff.text().await.map_err(failed)?;
    if shown.trim_end() != SUMMARY_DIFF.trim_end() {
        return Err(format!("the relayed approval's diff {shown:?}"));
    }
    // The lead's page: the reader's call nested under the lead's first call.
    show(browser, &format!("{base}/#/runs/{run_id}")).await?;
    let nested = wait_for(browser, "#timeline li.call ol.subagent li.call").await;
    let nested_text = nested.text().await.map_err(failed)?;
    if !nested_text.contains("read_file") {
        return Err(format!("the reader's nested call {nested_text:?}"));
    }
    let approve = wait_for(browser, "#run-pending .card button.primary").await;
    approve.click().await.map_err(failed)?;
    ended_with(browser, "#timeline > li.end", "the scribe wrote them").await?;
    let children = browser
        .find_all(Locator::Css("#timeline ol.subagent"))
        .await
        .map_err(failed)?;
    if children.len() != 2 {
        return Err(format!("{} nested subagent runs, not 2", children.len()));
    }
    // The scribe's write, resumed after the approval, ended in its nested entry.
    let mut writes = Vec::new();
    for call in browser
        .find_all(Locator::Css("#timeline ol.subagent li.call"))
        .await
        .map_err(failed)?
    {
        let text = call.text().await.map_err(failed)?;
        if text.contains("write_file") {
            writes.push(text);
        }
    }
    if writes.len() != 1 || !writes[0].contains("ok (approved)") {
        return Err(format!("the scribe's write: {writes:?}"));
    }
    Ok(())
}

/// A scripted agent whose one command prints more than a result may hold: the whole
/// output is saved in the workspace as the result's artifact.
const LONG_YAML: &str = "tools:\n  builtin: [exec.command]\npermissions:\n  execute_mode: allow\n\
    model:\n  provider: scripted\n  script:\n    - text: Counting.\n      tool_calls: [{name: \
    exec_command, arguments: {command: seq 1 100000}}]\n    - {expect_tool_results: 1, text: \
    Counted.}\n";

/// The files under `dir`, recursively.
fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let path = entry.path();
            if path.is_dir() {
                stack.push(path);
            } else {
                files.push(path);
            }
        }
    }
    files
}

/// A result saved as an artifact is a download link in the timeline, labelled with its
/// file name, type and size: the page's fetch of it (the one a click makes, with the
/// token when there is one) is the file on disk, and a click saves that file.
#[test]
fn the_console_downloads_a_results_artifact() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("iris.yaml"), LONG_YAML).unwrap();
    let (_served, base) = serve(dir.path(), &[], &[]);
    let run_id = start_run(&base, "", "Count");
    run_until(&base, "", &run_id, |v| v["status"] == "completed");
    let saved = files_under(&dir.path().join(".iris/tool-results"));
    assert_eq!(saved.len(), 1, "{saved:?}");
    let body = std::fs::read_to_string(&saved[0]).unwrap();
    assert!(body.ends_with("\n99999\n100000\n"), "the whole output");
    let name = saved[0].file_name().unwrap().to_str().unwrap().to_owned();
    let downloads = tempfile::tempdir().unwrap();
    let artifact = Artifact {
        run_id: &run_id,
        name: &name,
        body: &body,
        downloads: downloads.path(),
    };
    let errors = in_browser_saving_to(Some(downloads.path()), |browser| {
        Box::pin(download_artifact(browser, &base, artifact))
    });
    assert!(errors.is_empty(), "browser console errors: {errors:?}");
}

/// What the artifact test expects.
#[derive(Clone, Copy)]
struct Artifact<'a> {
    run_id: &'a str,
    name: &'a str,
    body: &'a str,
    downloads: &'a Path,
}

async fn download_artifact(browser: Client, base: &str, a: Artifact<'_>) -> Result<(), String> {
    let browser = &browser;
    let failed = |e: fantoccini::error::CmdError| e.to_string();
    show(browser, &format!("{base}/#/runs/{}", a.run_id)).await?;
    let box_ = wait_for(browser, "#timeline li.call .artifact").await;
    let label = box_.text().await.map_err(failed)?;
    for fragment in [&format!("Download {}", a.name), "text/plain", "KiB"] {
        if !label.contains(fragment) {
            return Err(format!("{fragment:?} not in the artifact {label:?}"));
        }
    }
    let link = wait_for(browser, "#timeline li.call .artifact a.download").await;
    let href = link.attr("href").await.map_err(failed)?;
    if href.as_deref() != Some(&*format!("/v1/runs/{}/artifacts/call_1_1", a.run_id)) {
        return Err(format!("the link's href {href:?}"));
    }
    // The fetch a click makes, from the page: the file on disk.
    let fetched = browser
        .execute_async(
            "const done = arguments[arguments.length - 1];\
             fetch(document.querySelector('#timeline a.download').href)\
               .then((r) => r.text()).then(done, (e) => done('failed: ' + e));",
            vec![],
        )
        .await
        .map_err(failed)?;
    if fetched.as_str() != Some(a.body) {
        return Err(format!(
            "the fetched artifact differs: {} chars",
            fetched.as_str().map_or(0, str::len)
        ));
    }
    // A click saves it under its own name (once the browser has finished writing it).
    link.click().await.map_err(failed)?;
    let saved = a.downloads.join(a.name);
    let deadline = Instant::now() + Duration::from_secs(30);
    while std::fs::read_to_string(&saved).ok().as_deref() != Some(a.body) {
        if Instant::now() > deadline {
            return Err(format!("not saved: {:?}", files_under(a.downloads)));
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    Ok(())
}

/// Runs a blocking call (the test's HTTP client) off the browser's runtime thread.
async fn off_thread<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
    tokio::task::spawn_blocking(f).await.unwrap()
}

/// `expression` in the page, once it is true.
async fn until_true(browser: &Client, expression: &str) -> Result<(), String> {
    let deadline = Instant::now() + Duration::from_secs(30);
    while eval(browser, expression).await != Value::Bool(true) {
        if Instant::now() > deadline {
            return Err(format!("never true: {expression}"));
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    Ok(())
}

/// The runs list and the inbox follow `GET /v1/events`: a run started through the API
/// appears in the list shown (no reload), the inbox count goes to 1 while it waits and
/// back to nothing once it is answered, and its row turns completed.
#[test]
fn the_runs_list_and_the_inbox_follow_runs_live() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("iris.yaml"), ASK_YAML).unwrap();
    let (_served, base) = serve(dir.path(), &[], &[]);
    let errors = in_browser(|browser| Box::pin(follow_live(browser, &base)));
    assert!(errors.is_empty(), "browser console errors: {errors:?}");
}

async fn follow_live(browser: Client, base: &str) -> Result<(), String> {
    let browser = &browser;
    let failed = |e: fantoccini::error::CmdError| e.to_string();
    browser.goto(&format!("{base}/")).await.map_err(failed)?;
    wait_for(
        browser,
        "#runs-view:not([hidden]) #runs-empty:not([hidden])",
    )
    .await;
    // A mark that a reload would lose.
    browser
        .execute("window.__sameLoad = 1;", vec![])
        .await
        .map_err(failed)?;
    let owned = base.to_owned();
    let run_id = off_thread(move || start_run(&owned, "", "Greet")).await;
    let row = format!("tr[data-run=\"{run_id}\"]");
    wait_for(browser, &format!("{row} .badge.waiting")).await;
    until_true(
        browser,
        "document.getElementById('inbox-count').textContent === '1'",
    )
    .await?;
    assert_eq!(
        eval(browser, "window.__sameLoad").await,
        1,
        "the page reloaded"
    );
    let owned = base.to_owned();
    let id = run_id.clone();
    let answered = off_thread(move || {
        let waiting = run_until(&owned, "", &id, |v| v["status"] == "waiting");
        http()
            .post(format!("{owned}/v1/runs/{id}/answer"))
            .json(&json!({"interaction_id": waiting["interaction"]["id"], "answer": "text", "text": "hi"}))
            .send()
            .unwrap()
            .status()
            .as_u16()
    })
    .await;
    assert_eq!(answered, 202);
    wait_for(browser, &format!("{row} .badge.completed")).await;
    until_true(
        browser,
        "document.getElementById('inbox-count').textContent === ''",
    )
    .await?;
    assert_eq!(
        eval(browser, "window.__sameLoad").await,
        1,
        "the page reloaded"
    );
    Ok(())
}
