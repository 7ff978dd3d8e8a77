//! One protocol for "a human answered": every [`Interaction`] a run raises goes to the
//! run's [`InteractionHandler`] in process, and the same [`Answer`] type reaches a
//! waiting run through [`AgentRunner::resume`](crate::AgentRunner::resume). The
//! handler's `None` means "not now": the run waits, durably, for `resume`.
//!
//! Whichever way an answer comes, it is checked against its interaction in one place
//! ([`Interaction::check`]), which turns the pair into what the loop does next (an
//! `Accepted`): run the call, give it a result, deliver a secret, answer an MCP
//! server, or pass the answer on to a child run. An answer of the wrong kind (`Text`
//! to an approval), a text outside a question's options or a blank secret is refused
//! there with `RUN_ANSWER_INVALID`: on resume the refusal is the error; in process the
//! run waits instead, so a host's mistake never runs or skips a call.
//!
//! ```
//! use iris_runner::{Answer, ApprovalRequest, Interaction, InteractionHandler};
//!
//! // A policy: approve reads, leave everything else to a human later.
//! let policy = |interaction: &Interaction| match interaction {
//!     Interaction::Approval(a) if a.tool_name == "read_file" => Some(Answer::Approve),
//!     _ => None,
//! };
//! let approval = Interaction::Approval(ApprovalRequest {
//!     id: "run_1:call_1".into(), run_id: "run_1".into(), call_id: "call_1".into(),
//!     tool_name: "read_file".into(), arguments: serde_json::json!({}),
//!     reason: "read_file needs approval".into(),
//! });
//! assert!(approval.check(&Answer::Approve).is_ok());
//! let wrong = approval.check(&Answer::Text { text: "yes".into() }).unwrap_err();
//! assert_eq!(wrong.error.code, "RUN_ANSWER_INVALID");
//! assert_eq!(wrong.misfit, iris_runner::Misfit::Kind);
//! # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
//! assert_eq!(policy.answer(&approval).await, Some(Answer::Approve));
//! # });
//! ```

use std::sync::Arc;

use iris_mcp::{ElicitationAnswer, ElicitationKind};
use iris_tools_core::{BoxFuture, ToolErrorInfo, ToolOutput, codes as core_codes};
use serde_json::Value;

use crate::error::codes;
use crate::outcome::{Answer, ElicitationInteraction, Interaction, RunError};
use crate::runner::TRACING_TARGET;
use crate::secret::{self, SecretValue};

/// Answers a run's interactions while it is in flight: a terminal prompt, a UI, a
/// policy.
///
/// Asked for every interaction the run raises — an approval, an `ask_question`, a
/// secret, an MCP server's request for input — with the same [`Interaction`] a
/// waiting run reports; the answer is the same [`Answer`] that
/// [`AgentRunner::resume`](crate::AgentRunner::resume) takes. `None` makes the run
/// wait for `resume` (an MCP server of a session older than 2026-07-28, which cannot
/// wait, is declined instead). A subagent's child run asks its parent's handler
/// itself, so a [`Interaction::Subagent`] proxy is never asked.
///
/// A closure `Fn(&Interaction) -> Option<Answer>` is a handler.
pub trait InteractionHandler: Send + Sync {
    /// The answer to `interaction`, or `None` to leave it for `resume`.
    fn answer<'a>(&'a self, interaction: &'a Interaction) -> BoxFuture<'a, Option<Answer>>;
}

impl<F> InteractionHandler for F
where
    F: Fn(&Interaction) -> Option<Answer> + Send + Sync,
{
    fn answer<'a>(&'a self, interaction: &'a Interaction) -> BoxFuture<'a, Option<Answer>> {
        let answer = self(interaction);
        Box::pin(async move { answer })
    }
}

/// An answer checked against its interaction ([`Interaction::check`] is the only
/// maker): what the loop does with it, whichever route it came by.
#[derive(Debug)]
pub(crate) enum Accepted {
    /// The call's own answer: it runs, or its result is decided.
    Call(CallAnswer),
    /// What an MCP server hears.
    Elicitation(ElicitationAnswer),
    /// The answer of a subagent proxy's child interaction, passed on to the child
    /// (which checks it again against its own record).
    Subagent(Answer),
}

/// What an answer does to the call that raised its interaction.
#[derive(Debug)]
pub(crate) enum CallAnswer {
    /// Run the call: an approval approved (with the arguments the human saw), or an
    /// in-doubt call to run again (`None`).
    Run {
        /// The approved arguments.
        approved: Option<Value>,
    },
    /// The call's result is decided without running it: a denial, a question's
    /// answer, a skipped or recorded in-doubt call, a declined secret.
    Result {
        /// The result.
        output: ToolOutput,
        /// The tool the result names.
        tool: String,
    },
    /// A secret's value, for the host's store and the tools that use it.
    Secret {
        /// The secret's name.
        key: String,
        /// Its value (not blank).
        value: SecretValue,
    },
}

/// Why [`Interaction::check`] refused an answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AnswerRefused {
    /// What is wrong, with the stable code `RUN_ANSWER_INVALID` (what
    /// [`AgentRunner::resume`](crate::AgentRunner::resume) fails with).
    pub error: RunError,
    /// Which part of the answer does not fit.
    pub misfit: Misfit,
}

/// Which part of an answer does not fit its interaction ([`AnswerRefused`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Misfit {
    /// Another kind of answer than the interaction takes (`Text` to an approval): a
    /// frontend may list the answers that fit instead.
    Kind,
    /// The kind it takes, with a value it cannot take: a text outside a question's
    /// options, a blank secret, a form answer that is not a JSON object.
    Value,
}

impl AnswerRefused {
    fn new(misfit: Misfit, message: String) -> Self {
        Self {
            error: RunError::new(codes::RUN_ANSWER_INVALID, message),
            misfit,
        }
    }
}

impl From<AnswerRefused> for RunError {
    fn from(refused: AnswerRefused) -> Self {
        refused.error
    }
}

impl std::fmt::Display for AnswerRefused {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.error.fmt(f)
    }
}

impl std::error::Error for AnswerRefused {}

impl Interaction {
    /// Whether `answer` fits this interaction: the checks every route makes before
    /// an answer does anything (the `iris` CLI makes them before it starts a resume).
    ///
    /// # Errors
    /// [`AnswerRefused`] (`RUN_ANSWER_INVALID`): the wrong kind of answer
    /// ([`Misfit::Kind`]), or a text outside a question's options, a blank secret, a
    /// form answer that is not a JSON object ([`Misfit::Value`]).
    pub fn check(&self, answer: &Answer) -> Result<(), AnswerRefused> {
        self.accept(answer.clone()).map(drop)
    }

    /// `answer` checked and turned into what it makes the loop do.
    pub(crate) fn accept(&self, answer: Answer) -> Result<Accepted, AnswerRefused> {
        let invalid = |why: String| AnswerRefused::new(Misfit::Value, why);
        let expected = match (self, answer) {
            (Interaction::Approval(a), Answer::Approve) => {
                return Ok(Accepted::Call(CallAnswer::Run {
                    approved: Some(a.arguments.clone()),
                }));
            }
            (Interaction::Approval(a), Answer::Deny { reason }) => {
                return Ok(Accepted::Call(CallAnswer::Result {
                    output: denied(&a.tool_name, &reason),
                    tool: a.tool_name.clone(),
                }));
            }
            (Interaction::Question(q), Answer::Text { text }) => {
                if !q.options.is_empty() && !q.options.contains(&text) {
                    return Err(invalid(format!(
                        "the answer must be one of: {}",
                        q.options.join(", ")
                    )));
                }
                return Ok(Accepted::Call(CallAnswer::Result {
                    output: ToolOutput::text(text),
                    tool: crate::loop_tools::ask_question::ASK_QUESTION.to_owned(),
                }));
            }
            (Interaction::InDoubt(_), Answer::Rerun) => {
                return Ok(Accepted::Call(CallAnswer::Run { approved: None }));
            }
            (Interaction::InDoubt(d), Answer::Skip) => {
                return Ok(Accepted::Call(CallAnswer::Result {
                    output: ToolOutput::error(ToolErrorInfo::new(
                        codes::TOOL_IN_DOUBT,
                        format!(
                            "this `{}` call was interrupted by a crash and may or may not \
                             have run; the user chose not to run it again",
                            d.tool_name
                        ),
                    )),
                    tool: d.tool_name.clone(),
                }));
            }
            (Interaction::InDoubt(d), Answer::Record { output }) => {
                return Ok(Accepted::Call(CallAnswer::Result {
                    output: ToolOutput::text(output),
                    tool: d.tool_name.clone(),
                }));
            }
            (Interaction::Secret(s), Answer::Secret { value }) => {
                if value.is_blank() {
                    return Err(invalid(
                        "the secret is empty; give its value (or deny)".into(),
                    ));
                }
                return Ok(Accepted::Call(CallAnswer::Secret {
                    key: s.key.clone(),
                    value,
                }));
            }
            (Interaction::Secret(s), Answer::Deny { reason }) => {
                return Ok(Accepted::Call(CallAnswer::Result {
                    output: ToolOutput::error(ToolErrorInfo::new(
                        secret::codes::SECRET_DECLINED,
                        format!(
                            "the user did not give the secret `{}`: {reason}; the tools that \
                             need it keep failing",
                            s.key
                        ),
                    )),
                    tool: secret::STORE_SECRET.to_owned(),
                }));
            }
            (Interaction::Elicitation(e), answer) => {
                return elicitation_answer(e, answer).map(Accepted::Elicitation);
            }
            // A proxy takes the answer its child's interaction takes.
            (Interaction::Subagent(s), answer) => {
                s.inner.innermost().check(&answer)?;
                return Ok(Accepted::Subagent(answer));
            }
            (Interaction::Approval(_), _) => "approve or deny",
            (Interaction::Question(_), _) => "a text answer",
            (Interaction::InDoubt(_), _) => "rerun, skip or record",
            (Interaction::Secret(_), _) => "the secret's value (or deny)",
        };
        Err(AnswerRefused::new(
            Misfit::Kind,
            format!(
                "interaction `{}` is {}: answer it with {expected}",
                self.id(),
                self.kind()
            ),
        ))
    }
}

/// What the model gets for a call a human denied: `APPROVAL_DENIED` with the reason.
pub(crate) fn denied(tool_name: &str, reason: &str) -> ToolOutput {
    ToolOutput::error(
        ToolErrorInfo::new(
            core_codes::APPROVAL_DENIED,
            format!("the user denied this `{tool_name}` call: {reason}"),
        )
        .with_detail("reason", reason),
    )
}

/// What the server hears for an answer to its request: `Text` is the form's values
/// as a JSON object (or `accept` for a URL), `Deny` declines, `Elicitation` is the
/// server's answer as is (but never `wait`, which is no answer: `None` is).
fn elicitation_answer(
    interaction: &ElicitationInteraction,
    answer: Answer,
) -> Result<ElicitationAnswer, AnswerRefused> {
    let invalid = |why: String| AnswerRefused::new(Misfit::Value, why);
    match (answer, &interaction.request.kind) {
        (Answer::Elicitation { reply: ElicitationAnswer::Wait { .. } }, _) => Err(invalid(
            "`wait` is not an answer: a handler that cannot answer now returns None".into(),
        )),
        (Answer::Elicitation { reply }, _) => Ok(reply),
        (Answer::Deny { reason }, _) => Ok(ElicitationAnswer::decline(reason)),
        (Answer::Text { text }, ElicitationKind::Url { .. }) => {
            if matches!(text.trim().to_ascii_lowercase().as_str(), "accept" | "yes" | "y") {
                Ok(ElicitationAnswer::Accept { content: None })
            } else {
                Err(invalid(format!(
                    "a URL request is answered `accept` (the user went there) or denied, not `{text}`"
                )))
            }
        }
        (Answer::Text { text }, _) => match serde_json::from_str::<Value>(&text) {
            Ok(Value::Object(content)) => Ok(ElicitationAnswer::Accept {
                content: Some(content),
            }),
            _ => Err(invalid(format!(
                "a form is answered with its values as one JSON object (e.g. {{\"field\": \"value\"}}), not `{text}`"
            ))),
        },
        _ => Err(AnswerRefused::new(
            Misfit::Kind,
            "an elicitation is answered with --answer (the form's values as JSON, or accept for a URL) or --deny REASON".into(),
        )),
    }
}

/// Asks the run's handler about `interaction` in process: its answer checked, or
/// `None` when the run must wait (no handler, `None`, or an answer that does not fit,
/// logged). A subagent proxy is never asked: its child asked the same handler.
pub(crate) async fn ask(
    handler: Option<&Arc<dyn InteractionHandler>>,
    interaction: &Interaction,
) -> Option<Accepted> {
    if matches!(interaction, Interaction::Subagent(_)) {
        return None;
    }
    let answer = handler?.answer(interaction).await?;
    match interaction.accept(answer) {
        Ok(accepted) => Some(accepted),
        Err(e) => {
            tracing::warn!(
                target: TRACING_TARGET,
                interaction = interaction.id(),
                error = %e,
                "the interaction handler's answer does not fit; the run waits for resume"
            );
            None
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::outcome::{
        ApprovalRequest, InDoubtRequest, QuestionRequest, SecretRequest, SubagentRequest,
    };

    fn approval() -> Interaction {
        Interaction::Approval(ApprovalRequest {
            id: "r:c".into(),
            run_id: "r".into(),
            call_id: "c".into(),
            tool_name: "write_file".into(),
            arguments: json!({"file_path": "a"}),
            reason: "writes".into(),
        })
    }

    fn question(options: &[&str]) -> Interaction {
        Interaction::Question(QuestionRequest {
            id: "r:c".into(),
            run_id: "r".into(),
            call_id: "c".into(),
            question: "Which?".into(),
            options: options.iter().map(|o| (*o).to_owned()).collect(),
        })
    }

    fn in_doubt() -> Interaction {
        Interaction::InDoubt(InDoubtRequest {
            id: "r:c".into(),
            run_id: "r".into(),
            call_id: "c".into(),
            tool_name: "write_file".into(),
            arguments: json!({}),
        })
    }

    fn secret() -> Interaction {
        Interaction::Secret(SecretRequest {
            id: "r:c".into(),
            run_id: "r".into(),
            call_id: "c".into(),
            key: "K".into(),
            tools: vec![],
        })
    }

    fn proxy(inner: Interaction) -> Interaction {
        Interaction::Subagent(SubagentRequest {
            id: "p:c".into(),
            run_id: "p".into(),
            call_id: "c".into(),
            agent_selector: "a".into(),
            child_run_id: "r".into(),
            inner: Box::new(inner),
        })
    }

    /// Every answer kind against every interaction kind: the one table both routes use.
    #[test]
    fn answers_fit_their_interactions_in_one_place() {
        let text = |t: &str| Answer::Text { text: t.into() };
        let deny = Answer::Deny {
            reason: "no".into(),
        };
        let value = |v: &str| Answer::Secret {
            value: SecretValue::new(v),
        };
        let record = Answer::Record {
            output: "ok".into(),
        };
        let all = [
            Answer::Approve,
            deny.clone(),
            text("a"),
            Answer::Rerun,
            Answer::Skip,
            record.clone(),
            value("v"),
            Answer::Elicitation {
                reply: ElicitationAnswer::decline("no"),
            },
        ];
        let cases: Vec<(Interaction, Vec<Answer>)> = vec![
            (approval(), vec![Answer::Approve, deny.clone()]),
            (question(&[]), vec![text("a")]),
            (question(&["a", "b"]), vec![text("a")]),
            (
                in_doubt(),
                vec![Answer::Rerun, Answer::Skip, record.clone()],
            ),
            (secret(), vec![deny.clone(), value("v")]),
            (proxy(approval()), vec![Answer::Approve, deny.clone()]),
            (proxy(question(&["a"])), vec![text("a")]),
        ];
        for (interaction, fits) in cases {
            for answer in &all {
                let result = interaction.check(answer);
                if fits.contains(answer) {
                    assert!(
                        result.is_ok(),
                        "{} {answer:?}: {result:?}",
                        interaction.kind()
                    );
                } else {
                    let e = result.unwrap_err();
                    assert_eq!(
                        (e.error.code.as_str(), e.misfit),
                        ("RUN_ANSWER_INVALID", Misfit::Kind),
                        "{} {answer:?}",
                        interaction.kind()
                    );
                }
            }
        }
        // Values are checked too, not only kinds.
        let misfit = |i: Interaction, a: Answer| i.check(&a).unwrap_err().misfit;
        assert_eq!(misfit(question(&["a", "b"]), text("c")), Misfit::Value);
        assert_eq!(misfit(secret(), value("  ")), Misfit::Value);
        assert_eq!(misfit(proxy(question(&["a"])), text("c")), Misfit::Value);
    }

    /// An approval's `Approve` carries the arguments the human saw; a proxy is never
    /// asked in process (its child asked already); a wrong answer in process waits.
    #[test]
    fn in_process_answers_are_checked_and_proxies_are_not_asked() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        rt.block_on(async {
            let Ok(Accepted::Call(CallAnswer::Run { approved })) =
                approval().accept(Answer::Approve)
            else {
                panic!()
            };
            assert_eq!(approved, Some(json!({"file_path": "a"})));
            let always: Arc<dyn InteractionHandler> =
                Arc::new(|_: &Interaction| Some(Answer::Approve));
            assert!(ask(Some(&always), &approval()).await.is_some());
            assert!(ask(Some(&always), &proxy(approval())).await.is_none());
            assert!(
                ask(Some(&always), &question(&[])).await.is_none(),
                "wrong kind"
            );
            assert!(ask(None, &approval()).await.is_none());
        });
    }
}
