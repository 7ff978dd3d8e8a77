"""Reference benchmark: the OpenAI Agents SDK's cost per turn as one run grows.

It replays the script of `benches/long_run.rs` through `Runner.run`: a fake `Model`
subclass asks for one `read_file` of the same file (1 KB or 10 KB of text) at each of
1,000 turns, then answers; like the Rust model it checks that every request after the
first ends with the previous call's result. The model stamps the time of each request;
the time of turn t runs from request t to request t + 1. Each figure is the median of
the five turns ending at 10, 100 and 1,000, then the median over the rounds.

Two ways to keep the conversation: none (the run's items in memory, the SDK's
default) and the SDK's `SQLiteSession` (a file, the SDK's own durable session store).
With the session the model also samples the bytes this process passed to `write`
(`wchar` in `/proc/self/io`) at each request (a few microseconds against turns of
milliseconds).

Tracing is disabled (globally and in the `RunConfig`), which favours the SDK.

Usage (`cargo xtask bench` makes the venv with `benches/bench-venv.sh` and runs this):
    target/bench-venv/bin/python crates/iris-runner/benches/openai_agents_long_run.py [--rounds N]

Prints one line of JSON per variant, with the keys the Rust bench prints.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import statistics
import tempfile
import time
from importlib import metadata

from agents import Agent, Model, ModelResponse, RunConfig, Runner, Usage, function_tool
from agents import set_tracing_disabled
from agents.memory.sqlite_session import SQLiteSession
from openai.types.responses import (
    ResponseFunctionToolCall,
    ResponseOutputMessage,
    ResponseOutputText,
)

TURNS = 1_000
REPORTED = (10, 100, 1_000)
WINDOW = 5
FINAL = "Read it 1,000 times."
ARGUMENTS = json.dumps({"file_path": "data.txt"})


class ScriptError(Exception):
    """The run did not send what the script expects."""


def wchar() -> int:
    with open("/proc/self/io") as f:
        for line in f:
            if line.startswith("wchar:"):
                return int(line.split()[1])
    return 0


class ReadLoop(Model):
    """Asks for `read_file` TURNS times, then answers."""

    def __init__(self, probe=None) -> None:
        self.next_turn = 0
        self.stamps: list[int] = []
        self.samples: list[int] = []
        self.probe = probe

    async def get_response(
        self,
        system_instructions,
        input,
        model_settings,
        tools,
        output_schema,
        handoffs,
        tracing,
        *,
        previous_response_id=None,
        conversation_id=None,
        prompt=None,
    ) -> ModelResponse:
        self.stamps.append(time.perf_counter_ns())
        if self.probe is not None:
            self.samples.append(self.probe())
        index = self.next_turn
        self.next_turn += 1
        if index > 0:
            last = input[-1] if isinstance(input, list) and input else None
            if not (
                isinstance(last, dict)
                and last.get("type") == "function_call_output"
                and last.get("call_id") == f"call_{index}"
            ):
                raise ScriptError(f"turn {index + 1} does not follow call_{index}'s result")
        if index < TURNS:
            output = [
                ResponseFunctionToolCall(
                    arguments=ARGUMENTS,
                    call_id=f"call_{index + 1}",
                    name="read_file",
                    type="function_call",
                    id=f"fc_{index + 1}",
                    status="completed",
                )
            ]
        else:
            output = [
                ResponseOutputMessage(
                    id=f"msg_{index + 1}",
                    type="message",
                    role="assistant",
                    status="completed",
                    content=[
                        ResponseOutputText(
                            text=FINAL, type="output_text", annotations=[], logprobs=[]
                        )
                    ],
                )
            ]
        return ModelResponse(output=output, usage=Usage(), response_id=f"scripted_{index + 1}")

    def stream_response(self, *args, **kwargs):
        raise NotImplementedError("the benchmark runs whole turns")


def read_file_tool(root: str):
    async def read_file(file_path: str) -> str:
        """Read a text file of the workspace.

        Args:
            file_path: The file, relative to the workspace.
        """
        with open(os.path.join(root, file_path), encoding="utf-8") as f:
            return f.read()

    return function_tool(read_file)


def median(values):
    return statistics.median(values)


def at_reported(series: list[float]) -> list[float]:
    per_turn = [b - a for a, b in zip(series, series[1:])]
    return [median(per_turn[t - WINDOW : t]) for t in REPORTED]


async def one_run(root: str, tool, session_path: str | None, probe=None):
    model = ReadLoop(probe)
    agent = Agent(name="bench", instructions="Read the file.", tools=[tool], model=model)
    session = SQLiteSession("bench", session_path) if session_path else None
    result = await Runner.run(
        agent,
        "Read data.txt until told to stop.",
        max_turns=TURNS + 2,
        run_config=RunConfig(tracing_disabled=True),
        session=session,
    )
    assert result.final_output == FINAL, result.final_output
    assert len(model.stamps) == TURNS + 1, len(model.stamps)
    if session is not None:
        session.close()
    return model


async def main(rounds: int) -> None:
    set_tracing_disabled(True)
    line = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ-=+*/\n"
    for size in (1_000, 10_000):
        with tempfile.TemporaryDirectory() as root:
            with open(os.path.join(root, "data.txt"), "w", encoding="utf-8") as f:
                f.write((line * (size // len(line) + 1))[:size])
            tool = read_file_tool(root)
            for store in ("memory", "sqlite_session"):
                at, written = [], []
                for r in range(rounds):
                    if store == "memory":
                        model = await one_run(root, tool, None)
                    else:
                        path = os.path.join(root, f"session_{r}.db")
                        model = await one_run(root, tool, path, wchar)
                        written.append(at_reported([float(s) for s in model.samples]))
                    at.append(at_reported([s / 1000 for s in model.stamps]))
                us = [median([a[i] for a in at]) for i in range(3)]
                bytes_per_turn = None
                if written:
                    b = [median([w[i] for w in written]) for i in range(3)]
                    bytes_per_turn = dict(zip(("10", "100", "1000"), b))
                print(
                    json.dumps(
                        {
                            "benchmark": "long_run",
                            "impl": "openai-agents",
                            "version": metadata.version("openai-agents"),
                            "python": platform.python_version(),
                            "store": store,
                            "result_bytes": size,
                            "rounds": rounds,
                            "turn_us": dict(zip(("10", "100", "1000"), us)),
                            "bytes_per_turn": bytes_per_turn,
                        }
                    ),
                    flush=True,
                )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    # One round: a 1,000-turn run of the SDK takes minutes by its end.
    parser.add_argument("--rounds", type=int, default=1)
    args = parser.parse_args()
    if args.rounds < 1:
        parser.error("--rounds must be at least 1")
    asyncio.run(main(args.rounds))
