// The Iris console: a client of `iris serve`'s HTTP API (/v1/…), no build step.
//
// Every string that comes from a run (model text, tool arguments and results, errors,
// names) is put in the page as text (textContent / text nodes), never as markup.
"use strict";

(() => {
  const $ = (id) => document.getElementById(id);
  const TOKEN_KEY = "iris-console-token";
  const LIST_REFRESH_MS = 4000;
  const RECONNECT_MS = 1000;

  /** An element with attributes and children (strings become text nodes). */
  function el(tag, attrs, ...children) {
    const node = document.createElement(tag);
    for (const [key, value] of Object.entries(attrs || {})) {
      if (value === undefined || value === null || value === false) continue;
      if (key === "text") node.textContent = String(value);
      else if (key === "className") node.className = value;
      else if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
      else node.setAttribute(key, value === true ? "" : String(value));
    }
    for (const child of children.flat()) {
      if (child === undefined || child === null || child === false) continue;
      node.append(child instanceof Node ? child : document.createTextNode(String(child)));
    }
    return node;
  }

  function status(message, isError) {
    const line = $("status");
    line.textContent = message || "";
    line.classList.toggle("error", Boolean(isError));
  }

  // ---- The API ----------------------------------------------------------------

  class ApiError extends Error {
    constructor(code, message, httpStatus) {
      super(message);
      this.code = code;
      this.httpStatus = httpStatus;
    }
  }

  function headers(extra) {
    const h = Object.assign({}, extra || {});
    const token = sessionStorage.getItem(TOKEN_KEY);
    if (token) h.Authorization = "Bearer " + token;
    return h;
  }

  async function api(path, options) {
    const opts = Object.assign({}, options || {});
    opts.headers = headers(opts.headers);
    const response = await fetch(path, opts);
    const text = await response.text();
    let body = null;
    try {
      body = text ? JSON.parse(text) : null;
    } catch (_) {
      body = null;
    }
    if (!response.ok) {
      const error = (body && body.error) || {};
      const failure = new ApiError(error.code || "HTTP_" + response.status,
        error.message || response.statusText, response.status);
      if (failure.code === "SERVE_UNAUTHORIZED") askForToken();
      throw failure;
    }
    return body;
  }

  function post(path, body) {
    return api(path, {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify(body || {}),
    });
  }

  function askForToken() {
    $("token-view").hidden = false;
    $("token-input").focus();
  }

  // ---- Formatting ---------------------------------------------------------------

  function age(ms) {
    const seconds = Math.max(0, Math.round((Date.now() - ms) / 1000));
    if (seconds < 60) return seconds + " s";
    if (seconds < 3600) return Math.round(seconds / 60) + " min";
    if (seconds < 86400) return Math.round(seconds / 3600) + " h";
    return Math.round(seconds / 86400) + " d";
  }

  function usage(u) {
    if (!u || typeof u !== "object") return "";
    return (u.input_tokens || 0) + " in / " + (u.output_tokens || 0) + " out";
  }

  function badge(state) {
    return el("span", { className: "badge " + String(state), text: state });
  }

  function json(value) {
    return el("pre", { className: "mono", text: JSON.stringify(value, null, 2) });
  }

  /** A unified diff, each line its own span (added, removed, hunk, file header). */
  function diffBlock(diff) {
    const pre = el("pre", { className: "diff mono", "aria-label": "Unified diff" });
    for (const line of String(diff).replace(/\n$/, "").split("\n")) {
      let kind = "";
      if (line.startsWith("+++") || line.startsWith("---")) kind = "file";
      else if (line.startsWith("@@")) kind = "hunk";
      else if (line.startsWith("+")) kind = "add";
      else if (line.startsWith("-")) kind = "del";
      pre.append(el("span", { className: kind, text: line }));
    }
    return pre;
  }

  function resultText(result) {
    const parts = [];
    for (const block of (result && result.content) || []) {
      if (block.type === "text") parts.push(block.text);
      else if (block.type === "image") parts.push("[image " + block.mime_type + "]");
    }
    return parts.join("\n");
  }

  // ---- Answering ------------------------------------------------------------------

  /** Sends an answer; `after` refreshes what shows it. */
  async function answer(runId, interactionId, body, after) {
    try {
      await post("/v1/runs/" + encodeURIComponent(runId) + "/answer",
        Object.assign({ interaction_id: interactionId }, body));
      status("Answer sent to run " + runId + "; the run goes on.");
    } catch (e) {
      status("The answer was refused: " + e.code + ": " + e.message, true);
    }
    if (after) after();
  }

  /**
   * The card of a pending interaction, with the controls that answer it. What a
   * subagent's child run waits for is answered through its parent: the inner
   * interaction's card, sent under the parent's interaction id.
   */
  function interactionCard(runId, pending, after) {
    const card = el("div", { className: "card", "data-interaction": pending.id });
    let interaction = pending;
    while (interaction.kind === "subagent" && interaction.inner) {
      card.append(el("p", { className: "meta" }, "Asked by subagent ",
        el("code", { text: interaction.agent_selector }), " (run ",
        el("a", { href: "#/runs/" + interaction.child_run_id, text: interaction.child_run_id }), ")"));
      interaction = interaction.inner;
    }
    const kind = interaction.kind;
    const send = (body) => answer(runId, pending.id, body, after);
    if (kind === "approval") {
      card.append(
        el("h3", {}, "Approve ", el("code", { text: interaction.tool_name }), "?"),
        el("p", { className: "meta" }, "Run ", el("a", { href: "#/runs/" + runId, text: runId }),
          ", call ", el("code", { text: interaction.call_id })),
        el("p", { text: interaction.reason }),
      );
      if (typeof interaction.diff === "string") {
        card.append(el("p", { className: "label", text: "Change to the file as it is now:" }),
          diffBlock(interaction.diff));
      } else {
        card.append(el("p", { className: "label", text: "Arguments:" }), json(interaction.arguments));
      }
      const reasonId = "deny-reason-" + pending.id;
      const reason = el("input", { id: reasonId, type: "text", name: "reason" });
      card.append(el("div", { className: "actions" },
        el("button", { type: "button", className: "primary", onclick: () => send({ answer: "approve" }) }, "Approve"),
        el("label", { for: reasonId }, "Reason for denying", reason),
        el("button", {
          type: "button", className: "danger",
          onclick: () => send({ answer: "deny", reason: reason.value.trim() || "denied in the console" }),
        }, "Deny"),
      ));
    } else if (kind === "question") {
      card.append(
        el("h3", { text: "The agent asks" }),
        el("p", { className: "meta" }, "Run ", el("a", { href: "#/runs/" + runId, text: runId })),
        el("p", { text: interaction.question }),
      );
      const options = interaction.options || [];
      if (options.length > 0) {
        card.append(el("div", { className: "actions", role: "group", "aria-label": "Options" },
          options.map((option) => el("button", {
            type: "button", onclick: () => send({ answer: "text", text: option }),
          }, option))));
      } else {
        const inputId = "answer-" + pending.id;
        const input = el("input", { id: inputId, type: "text", name: "answer" });
        card.append(el("div", { className: "actions" },
          el("label", { for: inputId }, "Answer", input),
          el("button", {
            type: "button", className: "primary",
            onclick: () => { if (input.value.trim()) send({ answer: "text", text: input.value }); },
          }, "Answer")));
      }
    } else if (kind === "in_doubt") {
      card.append(
        el("h3", {}, "A call may have run: ", el("code", { text: interaction.tool_name || "" })),
        el("p", { className: "meta" }, "Run ", el("a", { href: "#/runs/" + runId, text: runId })),
        json(interaction),
        el("div", { className: "actions" },
          el("button", { type: "button", onclick: () => send({ answer: "rerun" }) }, "Run it again"),
          el("button", { type: "button", onclick: () => send({ answer: "skip" }) }, "Do not run it again")),
      );
    } else {
      card.append(
        el("h3", {}, "Waiting: ", el("code", { text: kind })),
        el("p", { className: "meta" }, "Run ", el("a", { href: "#/runs/" + runId, text: runId }),
          ". Answer it with the API or ", el("code", { text: "iris resume" }), "."),
        json(interaction),
      );
    }
    return card;
  }

  // ---- The runs list ------------------------------------------------------------

  let nextCursor = null;

  function runRow(run) {
    return el("tr", { "data-run": run.run_id },
      el("td", {}, el("a", { href: "#/runs/" + run.run_id, className: "mono", text: run.run_id }),
        run.parent_run_id ? el("div", { className: "meta", text: "subagent of " + run.parent_run_id }) : null),
      el("td", {}, badge(run.status)),
      el("td", { text: run.agent }),
      el("td", { className: "nowrap", text: age(run.created_at_ms) }),
      el("td", { className: "nowrap", text: usage(run.usage) }),
      el("td", { text: run.waiting_for || "" }),
    );
  }

  async function loadRuns(more) {
    const query = more && nextCursor ? "?cursor=" + encodeURIComponent(nextCursor) : "";
    const page = await api("/v1/runs" + query);
    const body = $("runs-body");
    if (!more) body.replaceChildren();
    for (const run of page.runs) body.append(runRow(run));
    nextCursor = page.next_cursor || null;
    $("runs-more").hidden = !nextCursor;
    $("runs-empty").hidden = body.children.length > 0;
  }

  // ---- The inbox ----------------------------------------------------------------

  async function loadInbox() {
    const page = await api("/v1/runs?status=waiting&limit=200");
    const list = $("inbox-list");
    const cards = [];
    for (const run of page.runs) {
      // A subagent's child run is answered through its parent, listed on its own.
      if (run.parent_run_id) continue;
      const view = await api("/v1/runs/" + encodeURIComponent(run.run_id));
      if (view.interaction) {
        cards.push(el("li", {}, interactionCard(view.run_id, view.interaction, refresh)));
      }
    }
    // Keep what a human is typing: replace only when the set of interactions changed.
    const ids = cards.map((c) => c.firstChild.getAttribute("data-interaction")).join(",");
    if (list.getAttribute("data-ids") !== ids) {
      list.replaceChildren(...cards);
      list.setAttribute("data-ids", ids);
    }
    $("inbox-empty").hidden = cards.length > 0;
    $("inbox-count").textContent = cards.length > 0 ? String(cards.length) : "";
  }

  // ---- One run: summary, pending interaction, timeline over SSE -------------------

  /** Where a run's (or a subagent's) events are drawn. */
  class Timeline {
    constructor(list) {
      this.list = list;
      this.turn = null;
      this.turnText = null;
      this.calls = new Map();
      this.children = new Map();
      this.started = false;
    }

    add(item) {
      this.list.append(item);
      return item;
    }

    render(event) {
      switch (event.type) {
        case "accepted":
          this.add(el("li", {}, el("span", { className: "label", text: "Accepted" }),
            el("span", { className: "meta", text: "agent " + event.agent }),
            event.metadata ? json(event.metadata) : null));
          break;
        case "run_started":
          // A run driven again after an answer starts again.
          this.add(el("li", {}, el("span", { className: "label", text: this.started ? "Run resumed" : "Run started" }),
            el("span", { className: "meta", text: event.provider + " / " + event.model })));
          this.started = true;
          break;
        case "turn_started":
          this.turnText = el("p", { className: "text" });
          this.turn = this.add(el("li", { className: "turn" },
            el("span", { className: "label", text: "Model turn " + event.turn }), this.turnText));
          break;
        case "text_delta":
          if (!this.turnText) this.render({ type: "turn_started", turn: "" });
          this.turnText.append(document.createTextNode(event.text));
          break;
        case "usage":
          if (this.turn) {
            this.turn.append(el("div", { className: "meta", text: "tokens: " + usage(event.usage) }));
          }
          break;
        case "tool_call_started": {
          // A call resumed after its approval starts again: the same entry.
          const known = this.calls.get(event.call_id);
          if (known) {
            known.state.className = "badge running";
            known.state.textContent = "running";
            break;
          }
          const state = el("span", { className: "badge running", text: "running" });
          const item = this.add(el("li", { className: "call", "data-call": event.call_id },
            el("span", { className: "label" }, "Tool ", el("code", { text: event.tool_name })),
            el("span", { className: "meta", text: event.call_id }), " ", state,
            el("details", {}, el("summary", { text: "Arguments" }), json(event.arguments))));
          this.calls.set(event.call_id, { item, state });
          break;
        }
        case "approval_requested": {
          const call = this.calls.get(event.request.call_id);
          if (call) {
            call.state.className = "badge waiting";
            call.state.textContent = "waiting for approval";
          }
          break;
        }
        case "heartbeat":
        case "progress":
          break;
        case "tool_call_finished":
        case "background_finished":
          this.finishCall(event.result);
          break;
        case "elicitation_requested":
          this.add(el("li", {}, el("span", { className: "label", text: "An MCP server asks for input" })));
          break;
        case "elicitation_answered":
          this.add(el("li", {}, el("span", { className: "label", text: "Input given" }),
            el("span", { className: "meta", text: event.call_id })));
          break;
        case "subagent":
          this.child(event).render(event.event);
          break;
        case "finished":
          this.finished(event.outcome || {});
          break;
        case "error":
          this.add(el("li", { className: "failure" }, el("span", { className: "label", text: "Error" }),
            el("code", { text: event.code }), " ", event.message));
          break;
        default:
          if (event.truncated) {
            this.add(el("li", {}, el("span", { className: "label", text: "Event " + event.type }),
              el("span", { className: "meta", text: "too large to keep (" + event.bytes + " bytes)" })));
          }
      }
    }

    finishCall(result) {
      if (!result) return;
      let call = this.calls.get(result.tool_use_id);
      if (!call) {
        this.render({ type: "tool_call_started", call_id: result.tool_use_id, tool_name: result.tool_name, arguments: {} });
        call = this.calls.get(result.tool_use_id);
      }
      const error = result.is_error && result.error;
      call.state.className = "badge " + (result.is_error ? "error" : "ok");
      call.state.textContent = result.is_error ? "error " + ((error && error.code) || "") : (result.approved ? "ok (approved)" : "ok");
      const text = resultText(result);
      const shown = error && error.message ? error.message + (text ? "\n" + text : "") : text;
      call.item.append(el("div", { className: "result" },
        el("span", { className: "label", text: "Result" }),
        el("pre", { className: "mono", text: shown })));
      if (result.artifact) {
        const a = result.artifact;
        call.item.append(el("div", { className: "artifact" },
          el("span", { className: "label", text: "Artifact" }), el("code", { text: a.path }),
          el("span", { className: "meta", text: " " + a.mime_type + ", " + a.size_bytes + " bytes" })));
      }
    }

    child(event) {
      let child = this.children.get(event.child_run_id);
      if (!child) {
        const nested = el("ol", { className: "subagent", "aria-label": "Subagent run " + event.child_run_id });
        const call = this.calls.get(event.call_id);
        const holder = el("li", {}, el("span", { className: "label" }, "Subagent ",
          el("code", { text: event.agent_selector })),
          el("span", { className: "meta", text: event.child_run_id }), nested);
        if (call) call.item.append(el("ol", {}, holder));
        else this.add(holder);
        child = new Timeline(nested);
        this.children.set(event.child_run_id, child);
      }
      return child;
    }

    finished(outcome) {
      this.turn = null;
      this.turnText = null;
      const s = outcome.status;
      if (s === "completed") {
        this.add(el("li", { className: "end" }, el("span", { className: "label" }, "Completed "),
          el("p", { className: "text", text: outcome.output })));
      } else if (s === "waiting") {
        const what = (outcome.interaction && outcome.interaction.kind) || "an answer";
        this.add(el("li", {}, el("span", { className: "label", text: "Waiting" }),
          el("span", { className: "meta", text: "for " + what })));
      } else if (s === "failed") {
        const e = outcome.error || {};
        this.add(el("li", { className: "failure" }, el("span", { className: "label", text: "Failed" }),
          el("code", { text: e.code || "" }), " ", e.message || ""));
      } else if (s === "cancelled") {
        this.add(el("li", { className: "failure" }, el("span", { className: "label", text: "Cancelled" })));
      }
    }
  }

  /** The run shown now; its event stream is aborted when the view changes. */
  let current = null;

  async function showRunSummary(runId) {
    const view = await api("/v1/runs/" + encodeURIComponent(runId));
    if (!current || current.runId !== runId) return view;
    const summary = $("run-summary");
    const row = (term, value) => [el("dt", { text: term }), el("dd", {}, value)];
    summary.replaceChildren(
      ...row("Status", badge(view.status)),
      ...row("Agent", view.agent),
      ...row("Age", age(view.created_at_ms)),
      ...row("Turns", String(view.turns)),
      ...row("Usage", usage(view.usage)),
      ...(view.parent_run_id ? row("Subagent of", el("a", { href: "#/runs/" + view.parent_run_id, text: view.parent_run_id })) : []),
      ...(view.output ? row("Answer", el("span", { className: "text", text: view.output })) : []),
      ...(view.error ? row("Error", [el("code", { text: view.error.code }), " ", view.error.message]) : []),
    );
    const pending = $("run-pending");
    const id = view.interaction ? view.interaction.id : "";
    if (pending.getAttribute("data-id") !== id) {
      let shown = "";
      if (view.interaction && view.parent_run_id) {
        shown = el("p", { className: "card" }, "This subagent run is answered through its parent, ",
          el("a", { href: "#/runs/" + view.parent_run_id, text: view.parent_run_id }), ".");
      } else if (view.interaction) {
        shown = interactionCard(runId, view.interaction, () => showRunSummary(runId));
      }
      pending.replaceChildren(shown);
      pending.setAttribute("data-id", id);
    }
    $("run-cancel").hidden = !(view.status === "running" || view.status === "waiting");
    return view;
  }

  /** Reads the run's SSE stream with fetch (EventSource cannot send a bearer token). */
  async function follow(run) {
    while (!run.abort.signal.aborted) {
      const h = headers({ Accept: "text/event-stream" });
      if (run.lastId) h["Last-Event-ID"] = run.lastId;
      let ended = false;
      try {
        const response = await fetch("/v1/runs/" + encodeURIComponent(run.runId) + "/events",
          { headers: h, signal: run.abort.signal });
        if (!response.ok) {
          const body = await response.json().catch(() => ({}));
          const error = (body && body.error) || {};
          if (error.code === "SERVE_UNAUTHORIZED") askForToken();
          status("Events: " + (error.code || response.status) + ": " + (error.message || ""), true);
          return;
        }
        const reader = response.body.getReader();
        const decoder = new TextDecoder();
        let buffer = "";
        for (;;) {
          const { value, done } = await reader.read();
          if (done) break;
          buffer += decoder.decode(value, { stream: true }).replace(/\r\n?/g, "\n");
          let cut;
          while ((cut = buffer.indexOf("\n\n")) >= 0) {
            const frame = buffer.slice(0, cut);
            buffer = buffer.slice(cut + 2);
            ended = onFrame(run, frame) || ended;
          }
        }
      } catch (e) {
        if (run.abort.signal.aborted) return;
      }
      if (ended) return;
      await new Promise((resolve) => setTimeout(resolve, RECONNECT_MS));
    }
  }

  /** One SSE frame; whether it ends the run's stream. */
  function onFrame(run, frame) {
    let id = null;
    const data = [];
    for (const line of frame.split("\n")) {
      if (line.startsWith(":")) continue;
      const colon = line.indexOf(":");
      const field = colon < 0 ? line : line.slice(0, colon);
      const value = colon < 0 ? "" : line.slice(colon + 1).replace(/^ /, "");
      if (field === "id") id = value;
      else if (field === "data") data.push(value);
    }
    if (data.length === 0) return false;
    if (id) run.lastId = id;
    let event;
    try {
      event = JSON.parse(data.join("\n"));
    } catch (_) {
      return false;
    }
    run.timeline.render(event);
    if (event.type === "finished" || event.type === "approval_requested") {
      showRunSummary(run.runId).catch(() => {});
      loadInbox().catch(() => {});
    }
    return event.type === "finished" && event.outcome && event.outcome.status !== "waiting";
  }

  function openRun(runId) {
    if (current && current.runId === runId) return;
    closeRun();
    $("run-title").textContent = "Run " + runId;
    $("timeline").replaceChildren();
    $("run-summary").replaceChildren();
    $("run-pending").replaceChildren();
    $("run-pending").removeAttribute("data-id");
    current = { runId, lastId: null, abort: new AbortController(), timeline: new Timeline($("timeline")) };
    showRunSummary(runId).catch((e) => status(e.code + ": " + e.message, true));
    follow(current);
  }

  function closeRun() {
    if (current) current.abort.abort();
    current = null;
  }

  // ---- Views --------------------------------------------------------------------

  function route() {
    const hash = location.hash || "#/runs";
    const views = { runs: $("runs-view"), run: $("run-view"), inbox: $("inbox-view") };
    let name = "runs";
    let runId = null;
    if (hash.startsWith("#/runs/")) {
      name = "run";
      runId = decodeURIComponent(hash.slice("#/runs/".length));
    } else if (hash === "#/inbox") {
      name = "inbox";
    }
    for (const [key, view] of Object.entries(views)) view.hidden = key !== name;
    $("nav-runs").toggleAttribute("aria-current", name !== "inbox");
    if (name !== "inbox") $("nav-runs").setAttribute("aria-current", "page");
    $("nav-inbox").toggleAttribute("aria-current", name === "inbox");
    if (name === "inbox") $("nav-inbox").setAttribute("aria-current", "page");
    if (name === "run") openRun(runId);
    else closeRun();
    refresh();
    const title = { runs: "runs-title", run: "run-title", inbox: "inbox-title" }[name];
    $(title).focus();
  }

  function refresh() {
    const failed = (e) => status(e.code + ": " + e.message, true);
    if (!$("runs-view").hidden) loadRuns(false).catch(failed);
    if (current) showRunSummary(current.runId).catch(failed);
    loadInbox().catch(failed);
  }

  function start() {
    $("token-form").addEventListener("submit", (e) => {
      e.preventDefault();
      sessionStorage.setItem(TOKEN_KEY, $("token-input").value.trim());
      $("token-input").value = "";
      $("token-view").hidden = true;
      status("");
      refresh();
      if (current) {
        const runId = current.runId;
        closeRun();
        openRun(runId);
      }
    });
    $("runs-more").addEventListener("click", () => loadRuns(true).catch((e) => status(e.message, true)));
    $("run-cancel").addEventListener("click", async () => {
      if (!current) return;
      try {
        await post("/v1/runs/" + encodeURIComponent(current.runId) + "/cancel");
        status("Run " + current.runId + " cancelled.");
      } catch (e) {
        status("The cancel was refused: " + e.code + ": " + e.message, true);
      }
      refresh();
    });
    window.addEventListener("hashchange", route);
    setInterval(() => {
      if (!$("runs-view").hidden || !$("inbox-view").hidden) refresh();
    }, LIST_REFRESH_MS);
    route();
  }

  start();
})();
