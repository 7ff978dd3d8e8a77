//! Code mode in the run loop: `run_tool_script` from the agent YAML, approvals of inner
//! calls that wait and resume, and the context a script saves against direct calls.

use crate::support::{Fixture, runtime};
use iris_runner::{AgentRunner, Answer, Interaction, RunEvent, RunOutcome};

/// A script that lists the workspace, writes a note and prints what it did.
const WRITE_SCRIPT: &str = r#"
run_store: {kind: memory}
tools:
  builtin: [file.list, file.write, exec.tool_script]
  script: {callable: [write_file]}
model:
  provider: scripted
  script:
    - tool_calls:
        - name: run_tool_script
          arguments:
            code: |
              import iris_tools
              files = [l for l in iris_tools.list_files().text.splitlines() if l.endswith(".txt")]
              iris_tools.write_file(file_path="summary.md", content=f"{len(files)} text files\n")
              print("wrote summary.md for", len(files), "files")
    - {expect_tool_results: 1, text: done}
"#;

/// Default permissions: `run_tool_script` (execute) asks first; the approved program
/// then reaches its inner `write_file` (write), which asks again; each answer resumes
/// the run, and the program's write happens once, after the second approval.
#[test]
fn a_scripts_inner_write_makes_the_run_wait_and_each_approval_resumes_it() {
    let fx = Fixture::new(WRITE_SCRIPT, &[("a.txt", "a"), ("b.txt", "b")]);
    runtime().block_on(async {
        let runner = AgentRunner::from_config_path(fx.file()).await.unwrap();
        let RunOutcome::Waiting {
            run_id,
            interaction,
        } = runner.run("summarize").await
        else {
            panic!("expected a wait for the script itself")
        };
        let Interaction::Approval(first) = &interaction else {
            panic!("{interaction:?}")
        };
        assert_eq!(first.tool_name, "run_tool_script");
        assert!(first.arguments.get("inner_calls").is_none(), "{first:?}");

        let second = runner
            .resume(&run_id, interaction.id(), Answer::Approve)
            .await
            .unwrap();
        let RunOutcome::Waiting { interaction, .. } = &second else {
            panic!("expected a wait for the inner write: {second:?}")
        };
        let Interaction::Approval(inner) = interaction else {
            panic!("{interaction:?}")
        };
        assert_eq!(inner.tool_name, "run_tool_script");
        assert!(
            inner.reason.contains("inner call `write_file`"),
            "{}",
            inner.reason
        );
        assert_eq!(inner.arguments["inner_calls"][0]["tool"], "write_file");
        assert_eq!(
            inner.arguments["inner_calls"][0]["arguments"]["file_path"],
            "summary.md"
        );
        assert!(!fx.root().join("summary.md").exists(), "nothing ran yet");

        let done = runner
            .resume(&run_id, interaction.id(), Answer::Approve)
            .await
            .unwrap();
        assert_eq!(done.output(), Some("done"), "{done:?}");
        assert_eq!(
            std::fs::read_to_string(fx.root().join("summary.md")).unwrap(),
            "2 text files\n"
        );
        runner.close().await.unwrap();
    });
}

/// Twelve files, three of them with a TODO.
fn tree() -> Vec<(String, String)> {
    (0..12)
        .map(|i| {
            let body = if i % 4 == 1 {
                format!(
                    "# part {i}\nTODO: finish part {i}\n{}\n",
                    "context line\n".repeat(20)
                )
            } else {
                format!("# part {i}\n{}\n", "done line\n".repeat(20))
            };
            (format!("src/f{i:02}.txt"), body)
        })
        .collect()
}

fn direct_yaml() -> String {
    let greps: Vec<String> = (0..12)
        .map(|i| {
            format!(
                "        - {{name: grep_search, arguments: {{pattern: TODO, path: src/f{i:02}.txt}}}}"
            )
        })
        .collect();
    format!(
        r#"
tools: {{builtin: [file.list, file.grep, exec.tool_script]}}
permissions: {{execute_mode: allow}}
model:
  provider: scripted
  script:
    - tool_calls: [{{name: list_files, arguments: {{path: src}}}}]
    - expect_tool_results: 1
      tool_calls:
{}
    - {{expect_tool_results: 12, text: "f01.txt, f05.txt, f09.txt"}}
"#,
        greps.join("\n")
    )
}

const SCRIPT_YAML: &str = r#"
tools: {builtin: [file.list, file.grep, exec.tool_script]}
permissions: {execute_mode: allow}
model:
  provider: scripted
  script:
    - tool_calls:
        - name: run_tool_script
          arguments:
            code: |
              import iris_tools
              from concurrent.futures import ThreadPoolExecutor
              paths = [l for l in iris_tools.list_files(path="src").text.splitlines() if l.endswith(".txt")]
              def todo(p):
                  return p, iris_tools.grep_search(pattern="TODO", path=p).data["total_matches"]
              with ThreadPoolExecutor(8) as pool:
                  hits = sorted(p.split("/")[-1] for p, n in pool.map(todo, paths) if n)
              print(", ".join(hits))
    - {expect_tool_results: 1, text: "f01.txt, f05.txt, f09.txt"}
"#;

/// What one run cost the model: the bytes of tool results it read, the bytes of
/// arguments it wrote, model turns, and tool calls the host ran.
#[derive(Debug)]
struct Cost {
    read: usize,
    written: usize,
    turns: usize,
    results: Vec<String>,
}

async fn cost_of(yaml: &str) -> Cost {
    let files = tree();
    let files: Vec<(&str, &str)> = files
        .iter()
        .map(|(p, t)| (p.as_str(), t.as_str()))
        .collect();
    let fx = Fixture::new(yaml, &files);
    let runner = AgentRunner::from_config_path(fx.file()).await.unwrap();
    let mut stream = runner.run_streamed("Which files have a TODO?");
    let (mut read, mut written, mut turns, mut results) = (0, 0, 0, Vec::new());
    let mut last = None;
    while let Some(event) = stream.next().await {
        match &event {
            RunEvent::ToolCallStarted { arguments, .. } => {
                written += arguments.to_string().len();
            }
            RunEvent::ToolCallFinished { result, .. } => {
                read += result.model_content().len();
                results.push(result.model_content());
            }
            RunEvent::TurnStarted { .. } => turns += 1,
            _ => {}
        }
        last = Some(event);
    }
    let Some(RunEvent::Finished { outcome }) = last else {
        panic!("no Finished event")
    };
    assert_eq!(
        outcome.output(),
        Some("f01.txt, f05.txt, f09.txt"),
        "{outcome:?}"
    );
    runner.close().await.unwrap();
    Cost {
        read,
        written,
        turns,
        results,
    }
}

/// The same task through the run loop, by direct calls and by one script: the model
/// reads a fraction of the bytes (and needs fewer turns) with the script.
#[test]
fn one_script_reads_far_less_context_than_direct_calls_for_the_same_answer() {
    runtime().block_on(async {
        let direct = cost_of(&direct_yaml()).await;
        let script = cost_of(SCRIPT_YAML).await;
        assert_eq!(script.results, vec!["f01.txt, f05.txt, f09.txt\n".to_owned()]);
        assert_eq!(direct.results.len(), 13);
        assert!(
            script.read * 10 < direct.read,
            "script {script:?} vs direct {direct:?}"
        );
        assert!(script.turns < direct.turns);
        // The report the issue asks for (approximate tokens at 4 bytes each).
        println!(
            "code mode: direct calls read {} bytes (~{} tokens) in {} turns; one script read {} bytes (~{} tokens) in {} turns and wrote {} bytes of code vs {} bytes of arguments",
            direct.read,
            direct.read / 4,
            direct.turns,
            script.read,
            script.read / 4,
            script.turns,
            script.written,
            direct.written,
        );
    });
}
