//! The web console answers what a run waits for besides approvals and questions, in
//! Debian's headless `chromium` against the real `iris serve` (as in `console.rs`): a
//! secret a tool needs (a password field; the value appears in no page, storage or
//! log, and an empty one shows the API's refusal) and an MCP server's form (its
//! schema's fields as labelled inputs, sent as typed values to a server on the
//! official Python MCP SDK).

use fantoccini::key::Key;
use fantoccini::{Client, Locator};
use serde_json::{Value, json};

use super::console::{
    click, ended_with, eval, in_browser, run_until, screenshot, serve, show, start_run, wait_for,
};
use super::secret::{GOOD_KEY, tavily};
use super::signals::Spawned;

/// `examples/secret`: the search fails for want of a key, the model calls
/// `store_secret`, and the run waits for the secret. In the console: a labelled
/// password field; an empty value is refused with the API's code; the key typed and
/// sent with Enter heals the search and the run completes. The key is in no page
/// text or markup, no field, no storage and no console log, and the search server
/// got it.
#[test]
fn the_console_gives_a_secret() {
    let server = tavily();
    let dir = tempfile::tempdir().unwrap();
    std::fs::copy(
        super::examples().join("secret/iris.yaml"),
        dir.path().join("iris.yaml"),
    )
    .unwrap();
    let url = server.url();
    let (_served, base) = serve(dir.path(), &[], &[("IRIS_WEB__BASE_URL", &url)]);
    let run_id = start_run(&base, "", "Which runtime?");
    let waiting = run_until(&base, "", &run_id, |v| v["status"] == "waiting");
    assert_eq!(waiting["interaction"]["kind"], "secret", "{waiting}");

    let log = std::sync::Mutex::new(Vec::new());
    let errors = in_browser(|browser| Box::pin(give_secret(browser, &base, &run_id, &log)));
    // The empty value's refusal (a 422 the browser logs) is the only error.
    let (refusals, others): (Vec<&Value>, Vec<&Value>) = errors
        .iter()
        .partition(|e| e["message"].as_str().unwrap_or("").contains("422"));
    assert!(others.is_empty(), "browser console errors: {others:?}");
    assert_eq!(refusals.len(), 1, "{errors:?}");
    assert!(!format!("{errors:?}").contains(GOOD_KEY));
    let done = run_until(&base, "", &run_id, |v| v["status"] == "completed");
    assert_eq!(done["output"], "Tokio is the most used async runtime.");
    let auth: Vec<Option<String>> = server
        .requests()
        .iter()
        .map(|r| r.header("authorization").map(str::to_owned))
        .collect();
    assert_eq!(auth, [Some(format!("Bearer {GOOD_KEY}"))]);
    for seen in log.lock().unwrap().iter() {
        assert!(
            !seen.contains(GOOD_KEY),
            "the key was in the page: {seen:?}"
        );
    }
}

async fn give_secret(
    browser: Client,
    base: &str,
    run_id: &str,
    log: &std::sync::Mutex<Vec<String>>,
) -> Result<(), String> {
    let browser = &browser;
    let failed = |e: fantoccini::error::CmdError| e.to_string();
    show(browser, &format!("{base}/#/runs/{run_id}")).await?;
    let card = wait_for(browser, "#run-pending .card").await;
    let text = card.text().await.map_err(failed)?;
    for fragment in [
        "The agent needs the secret IRIS_PROVIDER_API_KEYS__TAVILY",
        "web_search",
    ] {
        if !text.contains(fragment) {
            return Err(format!("{fragment:?} not in the card {text:?}"));
        }
    }
    let input = wait_for(browser, "#run-pending input[type=password]").await;
    let id = input.attr("id").await.map_err(failed)?.unwrap_or_default();
    let label = browser
        .find(Locator::Css(&format!("#run-pending label[for=\"{id}\"]")))
        .await
        .map_err(failed)?;
    assert_eq!(
        label.text().await.map_err(failed)?,
        "Value of IRIS_PROVIDER_API_KEYS__TAVILY"
    );
    assert_eq!(
        input.attr("autocomplete").await.map_err(failed)?.as_deref(),
        Some("off")
    );
    // Nothing typed: the API's refusal, shown in the card.
    click(browser, "#run-pending form button[type=submit]").await?;
    let refusal = wait_for(browser, "#run-pending .refusal:not(:empty)").await;
    let refused = refusal.text().await.map_err(failed)?;
    if !refused.contains("RUN_ANSWER_INVALID") || !refused.contains("the secret is empty") {
        return Err(format!("the refusal {refused:?}"));
    }
    // The key, sent from the keyboard.
    input.send_keys(GOOD_KEY).await.map_err(failed)?;
    input
        .send_keys(&Key::Enter.to_string())
        .await
        .map_err(failed)?;
    ended_with(
        browser,
        "#timeline li.end",
        "Tokio is the most used async runtime.",
    )
    .await?;
    let mut seen = Vec::new();
    for expression in [
        "document.documentElement.outerHTML",
        "document.body.innerText",
        "[...document.querySelectorAll('input')].map((i) => i.value).join('\\n')",
        "JSON.stringify(Object.entries(sessionStorage))",
        "JSON.stringify(Object.entries(localStorage))",
    ] {
        seen.push(eval(browser, expression).await.to_string());
    }
    log.lock().unwrap().extend(seen);
    Ok(())
}

/// An MCP server on the official Python SDK whose one tool (read-only, so it needs no
/// approval) asks for a form with a
/// field of every kind the console draws (string, integer, number, boolean, enum),
/// through the SDK's resolver (an `input_required` result on 2026-07-28 sessions), and
/// reports what it got.
const FORM_SERVER: &str = r#"
from typing import Annotated, Literal

from mcp.server.elicitation import ElicitationResult
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.resolve import Elicit, Resolve
from mcp.types import ToolAnnotations
from pydantic import BaseModel, Field


class Order(BaseModel):
    colour: str = Field(description="The paint colour")
    litres: int = Field(description="How many litres")
    gloss: float = Field(default=0.5, description="Gloss, 0 to 1")
    primer: bool = Field(default=False, description="Add primer")
    finish: Literal["matte", "satin", "glossy"] = Field(description="The finish")


mcp = MCPServer("paint")


def _order() -> Elicit[Order]:
    return Elicit("Which <b>paint</b>?", Order)


@mcp.tool(annotations=ToolAnnotations(readOnlyHint=True))
async def order_paint(order: Annotated[ElicitationResult[Order], Resolve(_order)]) -> str:
    """Ask which paint to order and report the answer."""
    if order.action != "accept":
        return f"action={order.action}"
    o = order.data
    return f"colour={o.colour!r} litres={o.litres!r} gloss={o.gloss!r} primer={o.primer!r} finish={o.finish!r}"


mcp.run()
"#;

/// A scripted agent that calls the form server's tool, then answers.
const PAINT_YAML: &str = "model:\n  provider: scripted\n  script:\n    - tool_calls: [{name: \
    mcp__paint__order_paint}]\n    - {expect_tool_results: 1, text: Ordered.}\nmcp:\n  path: \
    mcp.json\n  overrides:\n    paint: {trust_annotations: true}\n";

/// `iris serve` over an agent that calls the form server's tool, and a run of it
/// waiting on the form: the folder, the server, its base URL and the run.
fn waiting_on_a_form() -> (tempfile::TempDir, Spawned, String, String) {
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("form_server.py");
    std::fs::write(&script, FORM_SERVER).unwrap();
    let mcp = json!({"mcpServers": {"paint": {"command": super::mcp::python(), "args": [script]}}});
    std::fs::write(dir.path().join("mcp.json"), mcp.to_string()).unwrap();
    std::fs::write(dir.path().join("iris.yaml"), PAINT_YAML).unwrap();
    let (served, base) = serve(dir.path(), &[], &[]);
    let run_id = start_run(&base, "", "Order paint");
    let waiting = run_until(&base, "", &run_id, |v| v["status"] == "waiting");
    assert_eq!(waiting["interaction"]["kind"], "elicitation", "{waiting}");
    (dir, served, base, run_id)
}

/// An MCP server's form, in the console: one labelled input per field of its schema
/// (required ones marked and required), its message as text; the values typed and
/// chosen reach the server with their JSON types and the run completes.
#[test]
fn the_console_fills_an_mcp_servers_form() {
    let (_dir, _served, base, run_id) = waiting_on_a_form();
    let errors = in_browser(|browser| Box::pin(fill_form(browser, &base, &run_id)));
    assert!(errors.is_empty(), "browser console errors: {errors:?}");
    let done = run_until(&base, "", &run_id, |v| v["status"] == "completed");
    assert_eq!(done["output"], "Ordered.");
}

/// Decline, with a reason, on the run's page: the server hears `decline` and the call
/// goes on without the values.
#[test]
fn the_console_declines_an_mcp_servers_form() {
    let (_dir, _served, base, run_id) = waiting_on_a_form();
    let errors = in_browser(|browser| Box::pin(decline_form(browser, &base, &run_id)));
    assert!(errors.is_empty(), "browser console errors: {errors:?}");
    run_until(&base, "", &run_id, |v| v["status"] == "completed");
}

async fn decline_form(browser: Client, base: &str, run_id: &str) -> Result<(), String> {
    let browser = &browser;
    let failed = |e: fantoccini::error::CmdError| e.to_string();
    show(browser, &format!("{base}/#/runs/{run_id}")).await?;
    wait_for(browser, "#run-pending .card form").await;
    let mut declined = false;
    for button in browser
        .find_all(Locator::Css("#run-pending .card button.danger"))
        .await
        .map_err(failed)?
    {
        if button.text().await.map_err(failed)? == "Decline" {
            button.click().await.map_err(failed)?;
            declined = true;
        }
    }
    if !declined {
        return Err("no Decline button".into());
    }
    let result = wait_for(browser, "#timeline li.call .result pre").await;
    assert_eq!(result.text().await.map_err(failed)?, "action=decline");
    Ok(())
}

async fn fill_form(browser: Client, base: &str, run_id: &str) -> Result<(), String> {
    let browser = &browser;
    let failed = |e: fantoccini::error::CmdError| e.to_string();
    show(browser, &format!("{base}/#/inbox")).await?;
    let card = wait_for(browser, "#inbox-list .card form").await;
    let card_text = card.text().await.map_err(failed)?;
    let whole = wait_for(browser, "#inbox-list .card").await;
    let whole_text = whole.text().await.map_err(failed)?;
    for fragment in ["The MCP server paint asks for input", "Which <b>paint</b>?"] {
        if !whole_text.contains(fragment) {
            return Err(format!("{fragment:?} not in the card {whole_text:?}"));
        }
    }
    // Every field labelled; the required ones marked (in the order the API gives the
    // schema's properties: by name).
    let labels = eval(
        browser,
        "[...document.querySelectorAll('#inbox-list form .field')].map((f) => {\
           const input = f.querySelector('input, select');\
           const label = f.querySelector('label[for=\"' + input.id + '\"]');\
           return [label.textContent, input.tagName.toLowerCase(), input.type, input.required];\
         })",
    )
    .await;
    assert_eq!(
        labels,
        json!([
            ["Colour (required)", "input", "text", true],
            ["Finish (required)", "select", "select-one", true],
            ["Gloss", "input", "number", false],
            ["Litres (required)", "input", "number", true],
            ["Primer", "input", "checkbox", false],
        ]),
        "{card_text}"
    );
    screenshot(browser, "console-form.png").await;
    let field = |name: &'static str| {
        let css = format!("#inbox-list form [name=\"{name}\"]");
        async move { wait_for(browser, &css).await }
    };
    field("colour")
        .await
        .send_keys("teal")
        .await
        .map_err(failed)?;
    field("litres").await.send_keys("3").await.map_err(failed)?;
    field("primer").await.click().await.map_err(failed)?;
    field("finish")
        .await
        .select_by_label("satin")
        .await
        .map_err(failed)?;
    click(browser, "#inbox-list form button[type=submit]").await?;
    show(browser, &format!("{base}/#/runs/{run_id}")).await?;
    ended_with(browser, "#timeline li.end", "Ordered.").await?;
    let result = wait_for(browser, "#timeline li.call .result pre").await;
    assert_eq!(
        result.text().await.map_err(failed)?,
        "colour='teal' litres=3 gloss=0.5 primer=True finish='satin'"
    );
    Ok(())
}
