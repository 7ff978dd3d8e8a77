//! `iris call`: one call through the full executor path.

#[allow(clippy::wildcard_imports)] // The shell's shared types and imports.
use crate::*;

/// A call id unique to this `iris` process: the artifact store names a large result's
/// file after it, so a later call never overwrites the file an earlier preview points
/// to.
pub(crate) fn call_id() -> String {
    let millis = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis())
        .unwrap_or_default();
    format!("cli-{millis}-{}", std::process::id())
}

/// What `iris call` was asked to do.
#[derive(Debug)]
pub(crate) struct CallOptions<'a> {
    pub(crate) name: &'a str,
    pub(crate) input: Option<&'a str>,
    pub(crate) yes: bool,
    pub(crate) timeout: Option<Duration>,
    pub(crate) session: Option<&'a str>,
}

pub(crate) async fn call(
    cli: &Cli,
    env: &ToolEnvironment,
    options: CallOptions<'_>,
    cancel: &CancellationSignal,
) -> Result<u8, Failure> {
    let CallOptions {
        name,
        input,
        yes,
        timeout,
        session,
    } = options;
    if let Some(id) = session {
        session::check_id(id)?;
    }
    if !env.registry.contains(name) {
        return Err(not_found(env, name));
    }
    let from_stdin = input == Some("-");
    let text = match input {
        None => "{}".to_owned(),
        Some("-") => read_blocking(cancel, || std::io::read_to_string(std::io::stdin()))
            .await?
            .map_err(|e| Failure::new(2, codes::INVALID_INPUT, format!("stdin: {e}")))?,
        Some(text) => text.to_owned(),
    };
    let arguments: Value = serde_json::from_str(&text).map_err(|e| {
        Failure::new(
            2,
            codes::INVALID_INPUT,
            format!("the call input is not JSON: {e}"),
        )
    })?;
    let mut ctx = ToolExecutionContext::new(&env.workspace)
        .session_id(session.unwrap_or(SESSION_ID))
        .cancellation(cancel.clone());
    if let Some(timeout) = timeout {
        ctx = ctx.tool_timeout(timeout);
    }
    // run_tool_script's inner calls run through the same executor.
    ctx = iris_script::ScriptHost::attach(ctx, &env.executor);
    // The session's read observations: read now, written back after the call.
    let reads = match session {
        Some(id) => {
            let file = session::file(&env.workspace, id);
            let state = session::load(&file)?;
            ctx.extensions.insert_arc(Arc::clone(&state));
            Some((file, state))
        }
        None => None,
    };
    // An MCP server's request for input is asked on the terminal, or declined
    // with why when there is none.
    let interactive = !from_stdin && std::io::stdin().is_terminal();
    ctx.extensions
        .insert(iris_mcp::McpElicitation::new(CallElicitation {
            interactive,
            cancel: cancel.clone(),
        }));
    let tool_use = ToolUse::new(call_id(), name, arguments);
    let mut result = env.executor.execute_one(&tool_use, &ctx, None).await;
    if cancel.requested() {
        return Err(Failure::cancelled());
    }
    if let Some(approval) = result.output.approval() {
        let reason = approval.reason.clone();
        let grant =
            iris_tools_core::ApprovalGrant::new(tool_use.id.clone(), approval.arguments.clone());
        let approved = if yes {
            true
        } else if !from_stdin && std::io::stdin().is_terminal() {
            ask(name, &reason, cancel).await?
        } else {
            return Err(Failure::new(
                4,
                codes::APPROVAL_REQUIRED,
                format!(
                    "`{name}` needs approval ({reason}); run on a terminal to answer, or pass --yes"
                ),
            ));
        };
        if !approved {
            return Err(Failure::new(
                4,
                codes::APPROVAL_REQUIRED,
                format!("`{name}` was not approved"),
            ));
        }
        // The grant carries what the human approved (a script's inner call).
        let ctx = ctx.clone().with_extension(grant);
        result = env
            .executor
            .execute_one(&tool_use, &ctx, Some(&tool_use.id))
            .await;
        if cancel.requested() {
            return Err(Failure::cancelled());
        }
    }
    if let Some((file, state)) = &reads {
        session::save(file, state)?;
    }
    if cli.json {
        print_json(&serde_json::to_value(&result).unwrap_or_default());
    } else {
        block(&result.model_content());
    }
    Ok(match result.error_code() {
        None => 0,
        // The call never ran: its input was wrong, like input that is not JSON.
        Some(codes::INVALID_INPUT) => 2,
        Some(_) => 1,
    })
}

/// `iris call`'s answerer of MCP elicitations: the terminal, or a decline with
/// [`elicit::NO_TERMINAL`].
pub(crate) struct CallElicitation {
    interactive: bool,
    cancel: CancellationSignal,
}

impl iris_mcp::ElicitationHandler for CallElicitation {
    fn elicit<'a>(
        &'a self,
        request: &'a iris_mcp::ElicitationRequest,
    ) -> iris_tools_core::BoxFuture<'a, iris_mcp::ElicitationAnswer> {
        Box::pin(async move {
            if self.interactive {
                elicit::ask(request, &self.cancel).await
            } else {
                iris_mcp::ElicitationAnswer::decline(elicit::NO_TERMINAL)
            }
        })
    }
}

/// Asks on the terminal; anything but `y`/`yes` declines.
pub(crate) async fn ask(
    name: &str,
    reason: &str,
    cancel: &CancellationSignal,
) -> Result<bool, Failure> {
    output::prompt(&format!(
        "iris: `{name}` needs approval: {reason}. Run it? [y/N] "
    ));
    let answer = read_blocking(cancel, || {
        let mut answer = String::new();
        std::io::stdin().read_line(&mut answer).map(|_| answer)
    })
    .await?;
    Ok(answer.is_ok_and(|a| matches!(a.trim().to_ascii_lowercase().as_str(), "y" | "yes")))
}
