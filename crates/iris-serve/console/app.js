// The Iris console: a client of `iris serve`'s HTTP API (/v1/…), no build step.
//
// Every string that comes from a run (model text, tool arguments and results, errors,
// names) is put in the page as text (textContent / text nodes), never as markup.
"use strict";

(() => {
  const $ = (id) => document.getElementById(id);
  const TOKEN_KEY = "iris-console-token";
  const RECONNECT_MS = 1000;
  const AGE_REDRAW_MS = 10000;
  // The object URL of a download outlives its click by this much (the save starts first).
  const REVOKE_AFTER_MS = 1000;

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
    for (const child of children.flat(Infinity)) {
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

  /**
   * Sends an answer; `after` refreshes what shows it. A refusal (its code and
   * message) is shown in the card too, where the answer was given.
   */
  async function answer(runId, interactionId, body, after, card) {
    const refusal = card && card.querySelector(".refusal");
    try {
      await post("/v1/runs/" + encodeURIComponent(runId) + "/answer",
        Object.assign({ interaction_id: interactionId }, body));
      if (refusal) refusal.textContent = "";
      status("Answer sent to run " + runId + "; the run goes on.");
    } catch (e) {
      if (refusal) refusal.textContent = "Refused: " + e.code + ": " + e.message;
      status("The answer was refused: " + e.code + ": " + e.message, true);
    }
    if (after) after();
  }

  /** A run's link and, when given, a call id: the card's "where". */
  function whereLine(runId, callId) {
    return el("p", { className: "meta" }, "Run ", el("a", { href: "#/runs/" + runId, text: runId }),
      callId ? ", call " : null, callId ? el("code", { text: callId }) : null);
  }

  let idCount = 0;

  /** An element id no other card uses (a run's card can show on its page and in the inbox). */
  function uniqueId(prefix) {
    idCount += 1;
    return prefix + "-" + idCount;
  }

  /** A text field and a Deny-style button that sends `{answer: "deny", reason}`. */
  function denyControls(idPrefix, labelText, buttonText, fallback, send) {
    const reasonId = uniqueId(idPrefix + "-reason");
    const reason = el("input", { id: reasonId, type: "text", name: "reason" });
    return [
      el("label", { for: reasonId }, labelText, reason),
      el("button", {
        type: "button", className: "danger",
        onclick: () => send({ answer: "deny", reason: reason.value.trim() || fallback }),
      }, buttonText),
    ];
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
    const send = (body) => answer(runId, pending.id, body, after, card);
    if (kind === "approval") {
      card.append(
        el("h3", {}, "Approve ", el("code", { text: interaction.tool_name }), "?"),
        whereLine(runId, interaction.call_id),
        el("p", { text: interaction.reason }),
      );
      if (typeof interaction.diff === "string") {
        card.append(el("p", { className: "label", text: "Change to the file as it is now:" }),
          diffBlock(interaction.diff));
      } else {
        card.append(el("p", { className: "label", text: "Arguments:" }), json(interaction.arguments));
      }
      card.append(el("div", { className: "actions" },
        el("button", { type: "button", className: "primary", onclick: () => send({ answer: "approve" }) }, "Approve"),
        denyControls("deny", "Reason for denying", "Deny", "denied in the console", send)));
    } else if (kind === "question") {
      card.append(
        el("h3", { text: "The agent asks" }),
        whereLine(runId),
        el("p", { text: interaction.question }),
      );
      const options = interaction.options || [];
      if (options.length > 0) {
        card.append(el("div", { className: "actions", role: "group", "aria-label": "Options" },
          options.map((option) => el("button", {
            type: "button", onclick: () => send({ answer: "text", text: option }),
          }, option))));
      } else {
        const inputId = uniqueId("answer");
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
        whereLine(runId),
        json(interaction),
        el("div", { className: "actions" },
          el("button", { type: "button", onclick: () => send({ answer: "rerun" }) }, "Run it again"),
          el("button", { type: "button", onclick: () => send({ answer: "skip" }) }, "Do not run it again")),
      );
    } else if (kind === "secret") {
      secretControls(card, runId, interaction, send);
    } else if (kind === "elicitation") {
      elicitationControls(card, runId, interaction, send);
    } else {
      card.append(
        el("h3", {}, "Waiting: ", el("code", { text: kind })),
        el("p", { className: "meta" }, "Run ", el("a", { href: "#/runs/" + runId, text: runId }),
          ". Answer it with the API or ", el("code", { text: "iris resume" }), "."),
        json(interaction),
      );
    }
    card.append(el("p", { className: "refusal", role: "alert" }));
    return card;
  }

  /**
   * A secret a tool needs: a password field whose value goes in the answer's body
   * only. The field is emptied before the request is sent; the value is never shown,
   * logged or stored.
   */
  function secretControls(card, runId, interaction, send) {
    const tools = interaction.tools || [];
    card.append(
      el("h3", {}, "The agent needs the secret ", el("code", { text: interaction.key })),
      whereLine(runId, interaction.call_id),
      tools.length > 0 ? el("p", {}, "For ", tools.map((t, i) => [i ? ", " : "", el("code", { text: t })])) : null,
      el("p", { className: "hint", text: "The value goes to the tools only: never to the model, the run store or any event." }),
    );
    const inputId = uniqueId("secret");
    const input = el("input", { id: inputId, type: "password", name: "secret", autocomplete: "off", spellcheck: "false" });
    // The refusal sits outside the form: Enter in its reason must not send the secret.
    const form = el("form", { className: "actions", "aria-label": "Give the secret " + interaction.key },
      el("label", { for: inputId }, "Value of " + interaction.key, input),
      el("button", { type: "submit", className: "primary" }, "Give the secret"));
    form.addEventListener("submit", (e) => {
      e.preventDefault();
      const value = input.value;
      input.value = "";
      send({ answer: "secret", value });
    });
    card.append(form, el("div", { className: "actions" },
      denyControls("refuse", "Reason for refusing", "Refuse", "refused in the console", send)));
  }

  /** An MCP server's form field: its label (required marked), its input, its value reader. */
  function formField(prefix, name, schema, required) {
    const id = uniqueId(prefix);
    const type = schema.type;
    const title = String(schema.title || name);
    const hintId = schema.description ? id + "-hint" : null;
    const hint = hintId ? el("span", { id: hintId, className: "hint", text: schema.description }) : null;
    const mark = required ? el("span", { className: "required", text: " (required)" }) : null;
    const common = { id, name, "aria-describedby": hintId, required: required || null };
    let input;
    let read;
    // An enum: `enum` (with `enumNames`), or `oneOf` of titled constants.
    const titled = Array.isArray(schema.oneOf) && schema.oneOf.every((o) => o && "const" in o);
    const values = titled ? schema.oneOf.map((o) => o.const) : schema.enum;
    if (Array.isArray(values)) {
      const names = titled ? schema.oneOf.map((o) => o.title) : Array.isArray(schema.enumNames) ? schema.enumNames : [];
      input = el("select", common,
        el("option", { value: "", text: "—" }),
        values.map((v, i) => el("option", { value: String(i), text: names[i] !== undefined ? names[i] : v })));
      const at = values.indexOf(schema.default);
      if (at >= 0) input.value = String(at);
      read = () => (input.value === "" ? undefined : values[Number(input.value)]);
    } else if (type === "boolean") {
      input = el("input", Object.assign({}, common, { type: "checkbox", required: null }));
      input.checked = schema.default === true;
      read = () => input.checked;
      return { node: el("div", { className: "field check" }, input, el("label", { for: id }, title, mark), hint), read };
    } else if (type === "integer" || type === "number") {
      input = el("input", Object.assign({}, common, {
        type: "number", step: type === "integer" ? "1" : "any", min: schema.minimum, max: schema.maximum,
      }));
      if (typeof schema.default === "number") input.value = String(schema.default);
      read = () => (input.value === "" ? undefined : Number(input.value));
    } else {
      input = el("input", Object.assign({}, common, {
        type: schema.format === "email" ? "email" : schema.format === "uri" ? "url" : "text",
        minlength: schema.minLength, maxlength: schema.maxLength,
      }));
      if (typeof schema.default === "string") input.value = schema.default;
      read = () => (input.value === "" && !required ? undefined : input.value);
    }
    return { node: el("div", { className: "field" }, el("label", { for: id }, title, mark), input, hint), read };
  }

  /**
   * An MCP server's request for input: its form's fields as labelled inputs, sent as
   * one JSON object of typed values (the answer `iris resume --answer` takes), or
   * declined; a URL request is accepted (the user went there) or declined.
   */
  function elicitationControls(card, runId, interaction, send) {
    const request = interaction.request || {};
    card.append(
      el("h3", {}, "The MCP server ", el("code", { text: request.server || "" }), " asks for input"),
      whereLine(runId, interaction.call_id),
      el("p", { className: "meta" }, "During ", el("code", { text: interaction.tool_name })),
      el("p", { className: "text", text: request.message }),
    );
    const decline = denyControls("decline", "Reason for declining", "Decline", "declined in the console", send);
    if (request.mode === "url") {
      const url = String(request.url || "");
      // Only a web address becomes a link; anything else (javascript:, data:) stays text.
      const shown = /^https?:\/\//i.test(url)
        ? el("a", { href: url, target: "_blank", rel: "noopener noreferrer", text: url })
        : el("code", { text: url });
      card.append(el("p", {}, "Open ", shown, " and complete it there."),
        el("div", { className: "actions" },
          el("button", { type: "button", className: "primary", onclick: () => send({ answer: "text", text: "accept" }) }, "Done, I went there"),
          decline));
      return;
    }
    const schema = request.requested_schema || {};
    const required = new Set(Array.isArray(schema.required) ? schema.required : []);
    const fields = Object.entries(schema.properties || {}).map(([name, property]) =>
      [name, formField("field", name, property || {}, required.has(name))]);
    const form = el("form", { className: "form", "aria-label": "The server's form" },
      fields.map(([, field]) => field.node),
      el("div", { className: "actions" }, el("button", { type: "submit", className: "primary" }, "Send")));
    form.addEventListener("submit", (e) => {
      e.preventDefault();
      const values = {};
      for (const [name, field] of fields) {
        const value = field.read();
        if (value !== undefined) values[name] = value;
      }
      send({ answer: "text", text: JSON.stringify(values) });
    });
    card.append(form, el("div", { className: "actions" }, decline));
  }

  // ---- The runs list ------------------------------------------------------------

  let nextCursor = null;

  function runRow(run) {
    return el("tr", { "data-run": run.run_id, "data-created": run.created_at_ms },
      el("td", {}, el("a", { href: "#/runs/" + run.run_id, className: "mono", text: run.run_id }),
        run.parent_run_id ? el("div", { className: "meta", text: "subagent of " + run.parent_run_id }) : null),
      el("td", {}, badge(run.status)),
      el("td", { text: run.agent }),
      el("td", { className: "nowrap age", text: age(run.created_at_ms) }),
      el("td", { className: "nowrap", text: usage(run.usage) }),
      el("td", { text: run.waiting_for || "" }),
    );
  }

  /** Each run's last known status, to see a run enter or leave `waiting`. */
  const knownStatus = new Map();

  async function loadRuns(more) {
    const query = more && nextCursor ? "?cursor=" + encodeURIComponent(nextCursor) : "";
    const page = await api("/v1/runs" + query);
    const body = $("runs-body");
    if (!more) body.replaceChildren();
    for (const run of page.runs) {
      body.append(runRow(run));
      knownStatus.set(run.run_id, run.status);
    }
    nextCursor = page.next_cursor || null;
    $("runs-more").hidden = !nextCursor;
    $("runs-empty").hidden = body.children.length > 0;
  }

  /**
   * A run created or changed (an item of `GET /v1/events`): its row replaced, or a
   * new row put in its place by age (a run older than every row shown belongs to a
   * page not loaded yet); the inbox read again when the run enters or leaves `waiting`.
   */
  function runChanged(run) {
    const body = $("runs-body");
    const row = runRow(run);
    const shown = [...body.children].find((tr) => tr.getAttribute("data-run") === run.run_id);
    if (shown) {
      shown.replaceWith(row);
    } else {
      const after = [...body.children].find((tr) => Number(tr.getAttribute("data-created")) < run.created_at_ms);
      if (after) body.insertBefore(row, after);
      else if (!nextCursor) body.append(row);
    }
    $("runs-empty").hidden = body.children.length > 0;
    const before = knownStatus.get(run.run_id);
    knownStatus.set(run.run_id, run.status);
    if (run.status === "waiting" || before === "waiting") loadInbox().catch(failed);
    if (current && current.runId === run.run_id) showRunSummary(run.run_id).catch(failed);
  }

  /** Whether `GET /v1/events` is being read (stopped while the API refuses it). */
  let watching = false;

  /**
   * Follows `GET /v1/events`: every run created or changed, on any host. There is no
   * replay, so the list and the inbox are read again on every (re)connect; a dropped
   * stream is opened again after a second.
   */
  async function watchRuns() {
    if (watching) return;
    watching = true;
    for (;;) {
      const how = await readEvents("/v1/events", null, null, (frame) => {
        if (frame.event !== "run") return false;
        try {
          runChanged(JSON.parse(frame.data));
        } catch (_) {
          // A frame that is not a run: nothing to show.
        }
        return false;
      }, refresh);
      if (how === "refused") break;
      await pause();
    }
    watching = false;
  }

  // ---- The inbox ----------------------------------------------------------------

  /** The inbox's reads, one at a time (the last one read shows). */
  let inboxRead = Promise.resolve();

  function loadInbox() {
    const next = inboxRead.then(readInbox, readInbox);
    inboxRead = next.catch(() => {});
    return next;
  }

  async function readInbox() {
    const page = await api("/v1/runs?status=waiting&limit=200");
    const list = $("inbox-list");
    const cards = [];
    for (const run of page.runs) {
      knownStatus.set(run.run_id, run.status);
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

  function bytes(n) {
    if (n < 1024) return n + " bytes";
    if (n < 1024 * 1024) return (n / 1024).toFixed(1) + " KiB";
    return (n / (1024 * 1024)).toFixed(1) + " MiB";
  }

  /**
   * A call's artifact as a download link. The link is the API's route; a click
   * fetches it with the bearer token (a plain link could not send it) and saves the
   * body through a temporary object URL.
   */
  function artifactLink(runId, callId, artifact) {
    const name = String(artifact.path).split(/[\\/]/).pop() || "artifact";
    const href = "/v1/runs/" + encodeURIComponent(runId) + "/artifacts/" + encodeURIComponent(callId);
    const link = el("a", {
      href, download: name, className: "download",
      onclick: (e) => { e.preventDefault(); download(href, name); },
    }, "Download ", el("code", { text: name }));
    return el("div", { className: "artifact" }, el("span", { className: "label", text: "Artifact" }), link,
      el("span", { className: "meta", text: " " + artifact.mime_type + ", " + bytes(artifact.size_bytes) }));
  }

  async function download(href, name) {
    try {
      const response = await fetch(href, { headers: headers() });
      if (!response.ok) {
        const body = await response.json().catch(() => ({}));
        const error = (body && body.error) || {};
        if (error.code === "SERVE_UNAUTHORIZED") askForToken();
        status("The download failed: " + (error.code || response.status) + ": " + (error.message || ""), true);
        return;
      }
      const url = URL.createObjectURL(await response.blob());
      const save = el("a", { href: url, download: name, hidden: true });
      document.body.append(save);
      save.click();
      save.remove();
      setTimeout(() => URL.revokeObjectURL(url), REVOKE_AFTER_MS);
    } catch (e) {
      status("The download failed: " + e.message, true);
    }
  }

  /** Where a run's (or a subagent's) events are drawn. */
  class Timeline {
    constructor(list, runId) {
      this.list = list;
      this.runId = runId;
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
        call.item.append(artifactLink(this.runId, result.tool_use_id, result.artifact));
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
        child = new Timeline(nested, event.child_run_id);
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

  /**
   * Reads an SSE stream with fetch (EventSource cannot send a bearer token), calling
   * `onOpen()` once it is open, then `onFrame({id, event, data})` for each frame with
   * data until it returns true (the end).
   * Resolves to "ended", "dropped" (reconnect), or "refused" (the API said no; shown).
   */
  async function readEvents(path, lastId, signal, onFrame, onOpen) {
    const h = headers({ Accept: "text/event-stream" });
    if (lastId) h["Last-Event-ID"] = lastId;
    try {
      const response = await fetch(path, { headers: h, signal });
      if (!response.ok) {
        const body = await response.json().catch(() => ({}));
        const error = (body && body.error) || {};
        if (error.code === "SERVE_UNAUTHORIZED") askForToken();
        status("Events: " + (error.code || response.status) + ": " + (error.message || ""), true);
        return "refused";
      }
      if (onOpen) onOpen();
      const reader = response.body.getReader();
      const decoder = new TextDecoder();
      let buffer = "";
      for (;;) {
        const { value, done } = await reader.read();
        if (done) return "dropped";
        buffer += decoder.decode(value, { stream: true }).replace(/\r\n?/g, "\n");
        let cut;
        while ((cut = buffer.indexOf("\n\n")) >= 0) {
          const frame = parseFrame(buffer.slice(0, cut));
          buffer = buffer.slice(cut + 2);
          if (frame && onFrame(frame)) {
            reader.cancel().catch(() => {});
            return "ended";
          }
        }
      }
    } catch (_) {
      return "dropped";
    }
  }

  /** One SSE frame's id, event name and data; null for a frame without data. */
  function parseFrame(text) {
    let id = null;
    let event = "message";
    const data = [];
    for (const line of text.split("\n")) {
      if (line.startsWith(":")) continue;
      const colon = line.indexOf(":");
      const field = colon < 0 ? line : line.slice(0, colon);
      const value = colon < 0 ? "" : line.slice(colon + 1).replace(/^ /, "");
      if (field === "id") id = value;
      else if (field === "event") event = value;
      else if (field === "data") data.push(value);
    }
    return data.length === 0 ? null : { id, event, data: data.join("\n") };
  }

  const pause = () => new Promise((resolve) => setTimeout(resolve, RECONNECT_MS));

  /** Follows the run's events, from where it left off after a drop. */
  async function follow(run) {
    while (!run.abort.signal.aborted) {
      const path = "/v1/runs/" + encodeURIComponent(run.runId) + "/events";
      const how = await readEvents(path, run.lastId, run.abort.signal, (frame) => onRunEvent(run, frame));
      if (how !== "dropped" || run.abort.signal.aborted) return;
      await pause();
    }
  }

  /** One event of the run shown; whether it ends the run's stream. */
  function onRunEvent(run, frame) {
    if (frame.id) run.lastId = frame.id;
    let event;
    try {
      event = JSON.parse(frame.data);
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
    current = { runId, lastId: null, abort: new AbortController(), timeline: new Timeline($("timeline"), runId) };
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

  function failed(e) {
    status(e.code + ": " + e.message, true);
  }

  function refresh() {
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
      watchRuns();
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
    // Ages move on without any event: redrawn from each row's creation time.
    setInterval(() => {
      for (const tr of $("runs-body").children) {
        tr.querySelector(".age").textContent = age(Number(tr.getAttribute("data-created")));
      }
    }, AGE_REDRAW_MS);
    route();
    watchRuns();
  }

  start();
})();
