"""Reference benchmark: one trivial tool call through the OpenAI Agents SDK.

It measures the same call as `benches/executor.rs` (`trivial::execute_one`): a tool
that echoes `text` back, invoked with the JSON arguments `{"text": "hi"}`, through
`FunctionTool.on_invoke_tool` (argument parsing and validation with the tool's
generated pydantic model, invocation, result conversion). The same function awaited
directly is measured too, so the SDK's overhead can be told from Python's own.

Every choice favours the SDK: each call is timed inside one running event loop (the
Rust numbers include entering the runtime with `block_on`), the `ToolContext` is built
once outside the timed region, and the SDK's tracing is disabled.

Usage:
    pip install openai-agents
    python crates/iris-executor/benches/openai_agents_trivial.py [--runs N]

Prints one line of JSON with the median (and p10/p90) nanoseconds per call.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import platform
import statistics
import time
from importlib import metadata

from agents import function_tool, set_tracing_disabled
from agents.tool_context import ToolContext


async def echo(text: str) -> str:
    """Echo the text back.

    Args:
        text: The text to return.
    """
    return text


ECHO_TOOL = function_tool(echo)
ARGUMENTS = json.dumps({"text": "hi"})


def percentile(samples: list[int], q: float) -> int:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


async def measure(call, runs: int, warmup: int) -> list[int]:
    for _ in range(warmup):
        await call()
    samples = []
    clock = time.perf_counter_ns
    for _ in range(runs):
        start = clock()
        await call()
        samples.append(clock() - start)
    return samples


async def main(runs: int, warmup: int) -> dict:
    set_tracing_disabled(True)
    ctx = ToolContext(
        context=None,
        tool_name=ECHO_TOOL.name,
        tool_call_id="call_1",
        tool_arguments=ARGUMENTS,
    )

    async def through_sdk():
        result = await ECHO_TOOL.on_invoke_tool(ctx, ARGUMENTS)
        assert result == "hi", result

    async def direct():
        result = await echo("hi")
        assert result == "hi", result

    sdk = await measure(through_sdk, runs, warmup)
    plain = await measure(direct, runs, warmup)
    return {
        "benchmark": "trivial_tool_call",
        "sdk": "openai-agents",
        "sdk_version": metadata.version("openai-agents"),
        "python": platform.python_version(),
        "runs": runs,
        "on_invoke_tool_median_ns": int(statistics.median(sdk)),
        "on_invoke_tool_p10_ns": percentile(sdk, 0.10),
        "on_invoke_tool_p90_ns": percentile(sdk, 0.90),
        "direct_median_ns": int(statistics.median(plain)),
        "overhead_median_ns": int(statistics.median(sdk) - statistics.median(plain)),
    }


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=20_000)
    parser.add_argument("--warmup", type=int, default=1_000)
    args = parser.parse_args()
    print(json.dumps(asyncio.run(main(args.runs, args.warmup))))
