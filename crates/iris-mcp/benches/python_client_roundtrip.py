"""The Python SDK's own client against the same fixture server the divan bench uses:
the baseline for `call_roundtrip_stdio`.

Usage: python python_client_roundtrip.py [CALLS]   (run with the venv's python)
Prints the median and mean of one `echo` call's round trip, in microseconds.
"""

import asyncio
import statistics
import sys
import time
from pathlib import Path

from mcp import Client
from mcp.client.stdio import StdioServerParameters

SERVER = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "mcp" / "sdk_server.py"


async def main(calls: int) -> None:
    params = StdioServerParameters(command=sys.executable, args=[str(SERVER)])
    async with Client(params) as client:
        for _ in range(20):  # warm-up, as divan does
            await client.call_tool("echo", {"text": "ping"})
        samples = []
        for _ in range(calls):
            start = time.perf_counter()
            await client.call_tool("echo", {"text": "ping"})
            samples.append((time.perf_counter() - start) * 1e6)
    print(
        f"python-sdk echo round trip over stdio: median {statistics.median(samples):.0f} us, "
        f"mean {statistics.mean(samples):.0f} us, n={calls}"
    )


if __name__ == "__main__":
    asyncio.run(main(int(sys.argv[1]) if len(sys.argv) > 1 else 500))
