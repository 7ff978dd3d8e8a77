"""Reference benchmark: the OpenAI Agents SDK's run loop, per turn, with a fake model.

It replays the script of `benches/run_loop.rs` through `Runner.run`: `N` (10) tool
turns, each asking for one `echo` call with the arguments `{"text": "hi"}` (or three
such calls in one turn, which the SDK runs concurrently), then a final answer. Like the
scripted provider, the fake `Model` subclass checks that every request after the first
ends with the previous turn's tool results, and builds a fresh response per request.

Measured the same way as the Rust bench, in paired rounds (each round times all five
measurements back to back):

    per turn = ((run_N - run_1) - (model_N - model_1)) / (N - 1) - calls_per_turn * body

* run_k: a whole `Runner.run` of k tool turns plus the final answer;
* model_k: the fake model alone, asked the very inputs that run gave it (captured from
  a run), in order;
* body: the echo function awaited directly, per call.

Every choice favours the SDK: each run is awaited inside one running event loop (the
Rust numbers include entering the runtime with `block_on`), and tracing is disabled
(globally and in the `RunConfig`).

Usage:
    python3 -m venv target/bench-venv && target/bench-venv/bin/pip install openai-agents
    target/bench-venv/bin/python crates/iris-runner/benches/openai_agents_run_loop.py [--rounds N]

Prints one line of JSON per variant, with the keys the Rust bench prints.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import platform
import statistics
import time
from importlib import metadata

from agents import Agent, Model, ModelResponse, RunConfig, Runner, Usage, function_tool
from agents import set_tracing_disabled
from openai.types.responses import (
    ResponseFunctionToolCall,
    ResponseOutputMessage,
    ResponseOutputText,
)

TURNS = 10
PROMPT = "Echo hi, then answer."
INSTRUCTIONS = "Use the echo tool when asked to."
FINAL = "Done: every echo said hi."
ARGUMENTS = json.dumps({"text": "hi"})
BODY_BATCH = 1_000


async def echo(text: str) -> str:
    """Echo the text back.

    Args:
        text: The text to return.
    """
    return text


ECHO_TOOL = function_tool(echo)


class ScriptError(Exception):
    """The run did not send what the script expects (the scripted provider's check)."""


def trailing_tool_results(items) -> int:
    """Tool results at the end of the input (those after the last model output)."""
    count = 0
    for item in reversed(items):
        if not isinstance(item, dict) or item.get("type") != "function_call_output":
            break
        count += 1
    return count


class ScriptedModel(Model):
    """Replays `tool_turns` turns of `calls` echo calls, then the final answer."""

    def __init__(self, tool_turns: int, calls: int) -> None:
        self.tool_turns = tool_turns
        self.calls = calls
        self.next_turn = 0
        self.captured: list[tuple] | None = None

    def reset(self) -> None:
        self.next_turn = 0

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
        if self.captured is not None:
            self.captured.append(
                (
                    system_instructions,
                    list(input) if isinstance(input, list) else input,
                    model_settings,
                    list(tools),
                    output_schema,
                    list(handoffs),
                    tracing,
                )
            )
        index = self.next_turn
        number = index + 1
        if index > self.tool_turns:
            raise ScriptError(f"the script has {self.tool_turns + 1} turns, all played")
        if index > 0:
            found = trailing_tool_results(input if isinstance(input, list) else [])
            if found != self.calls:
                raise ScriptError(
                    f"turn {number} expects {self.calls} tool result(s), found {found}"
                )
        self.next_turn += 1
        if index < self.tool_turns:
            output = [
                ResponseFunctionToolCall(
                    arguments=ARGUMENTS,
                    call_id=f"call_{number}_{c + 1}",
                    name="echo",
                    type="function_call",
                    id=f"fc_{number}_{c + 1}",
                    status="completed",
                )
                for c in range(self.calls)
            ]
        else:
            output = [
                ResponseOutputMessage(
                    id=f"msg_{number}",
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
        return ModelResponse(output=output, usage=Usage(), response_id=f"scripted_{number}")

    def stream_response(self, *args, **kwargs):
        raise NotImplementedError("the benchmark runs whole turns")


class Fixture:
    """One script, the agent that plays it, and the inputs a run gives the model."""

    def __init__(self, tool_turns: int, calls: int) -> None:
        self.model = ScriptedModel(tool_turns, calls)
        self.agent = Agent(
            name="bench",
            instructions=INSTRUCTIONS,
            tools=[ECHO_TOOL],
            model=self.model,
        )
        self.run_config = RunConfig(tracing_disabled=True)
        self.max_turns = tool_turns + 2
        self.tool_turns = tool_turns
        self.calls = calls
        self.requests: list[tuple] = []

    async def check(self) -> None:
        """One run, checked; captures the model's inputs for `replay`."""
        self.model.captured = []
        result = await self.run()
        self.requests, self.model.captured = self.model.captured, None
        assert result.final_output == FINAL, result.final_output
        assert len(self.requests) == self.tool_turns + 1, len(self.requests)
        outputs = [i for i in result.new_items if i.type == "tool_call_output_item"]
        assert len(outputs) == self.tool_turns * self.calls, len(outputs)
        assert all(o.output == "hi" for o in outputs), outputs

    async def run(self):
        self.model.reset()
        return await Runner.run(
            self.agent, PROMPT, max_turns=self.max_turns, run_config=self.run_config
        )

    async def replay(self) -> None:
        """The fake model alone, asked the run's inputs in order."""
        self.model.reset()
        model = self.model
        for instructions, items, settings, tools, schema, handoffs, tracing in self.requests:
            await model.get_response(
                instructions,
                items,
                settings,
                tools,
                schema,
                handoffs,
                tracing,
                previous_response_id=None,
                conversation_id=None,
                prompt=None,
            )


def median(samples: list[float]) -> float:
    return statistics.median(samples)


def percentile(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


async def timed(call) -> int:
    clock = time.perf_counter_ns
    start = clock()
    await call()
    return clock() - start


async def body_batch() -> None:
    for _ in range(BODY_BATCH):
        await echo("hi")


async def variant(name: str, calls: int, rounds: int, warmup: int) -> dict:
    short = Fixture(1, calls)
    long = Fixture(TURNS, calls)
    await short.check()
    await long.check()
    run_1, run_n, model_1, model_n, body = [], [], [], [], []
    for round_ in range(warmup + rounds):
        r1 = await timed(short.run)
        rn = await timed(long.run)
        m1 = await timed(short.replay)
        mn = await timed(long.replay)
        b = await timed(body_batch) / BODY_BATCH
        if round_ >= warmup:
            run_1.append(r1)
            run_n.append(rn)
            model_1.append(m1)
            model_n.append(mn)
            body.append(b)
    body_ns = median(body)
    per_turn = [
        ((run_n[i] - run_1[i]) - (model_n[i] - model_1[i])) / (TURNS - 1) - calls * body_ns
        for i in range(rounds)
    ]
    return {
        "benchmark": "run_loop",
        "impl": "openai-agents",
        "version": metadata.version("openai-agents"),
        "python": platform.python_version(),
        "variant": name,
        "calls_per_turn": calls,
        "tool_turns": TURNS,
        "rounds": rounds,
        "run_1_median_ns": round(median(run_1)),
        "run_n_median_ns": round(median(run_n)),
        "model_1_median_ns": round(median(model_1)),
        "model_n_median_ns": round(median(model_n)),
        "body_median_ns": round(body_ns, 1),
        "per_turn_overhead_median_ns": round(median(per_turn)),
        "per_turn_overhead_p10_ns": round(percentile(per_turn, 0.10)),
        "per_turn_overhead_p90_ns": round(percentile(per_turn, 0.90)),
    }


async def main(rounds: int, warmup: int) -> None:
    set_tracing_disabled(True)
    for name, calls in (("one_call", 1), ("three_parallel", 3)):
        print(json.dumps(await variant(name, calls, rounds, warmup)), flush=True)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=300)
    parser.add_argument("--warmup", type=int, default=30)
    args = parser.parse_args()
    if args.rounds < 1 or args.warmup < 0:
        parser.error("--rounds must be at least 1 and --warmup at least 0")
    asyncio.run(main(args.rounds, args.warmup))
