"""`iris mcp serve` against the Python SDK's own server, for the same trivial tool,
measured by the same Python SDK client in one run (`cargo xtask bench` runs it).

The tool reads a 6-byte file: Iris's built-in `read_file` (through the whole executor
path: validation, permission, workspace confinement, middleware, deadline, artifact
check) and an `MCPServer` tool `read_file(file_path)` that opens the file and returns
its text. Both servers run over stdio; each is asked once per protocol era (`auto`:
2026-07-28 after `server/discover`; `legacy`: `initialize`).

Usage: python serve_roundtrip.py IRIS_BINARY [CALLS]   (run with the venv's python)
       python serve_roundtrip.py --server              (the reference server itself)
Prints one line per server and era: median and mean round trip in microseconds.
"""

import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path


def reference_server() -> None:
    from mcp.server.mcpserver import MCPServer

    mcp = MCPServer("reference")

    @mcp.tool()
    def read_file(file_path: str) -> str:
        """Read a text file of the current folder."""
        return Path(file_path).read_text()

    mcp.run()


async def measure(params, mode: str, calls: int) -> list[float]:
    from mcp import Client

    async with Client(params, mode=mode) as client:
        for _ in range(20):  # warm-up, as divan does
            await client.call_tool("read_file", {"file_path": "hello.txt"})
        samples = []
        for _ in range(calls):
            start = time.perf_counter()
            result = await client.call_tool("read_file", {"file_path": "hello.txt"})
            samples.append((time.perf_counter() - start) * 1e6)
        assert not result.is_error and result.content[0].text == "hello\n", result
    return samples


async def main(iris: str, calls: int) -> None:
    from mcp.client.stdio import StdioServerParameters

    with tempfile.TemporaryDirectory() as folder:
        (Path(folder) / "hello.txt").write_text("hello\n")
        (Path(folder) / "iris.yaml").write_text("tools:\n  builtin: [file.read]\n")
        servers = {
            "iris mcp serve": StdioServerParameters(
                command=iris, args=["--config", "iris.yaml", "mcp", "serve"], cwd=folder
            ),
            "python-sdk MCPServer": StdioServerParameters(
                command=sys.executable, args=[str(Path(__file__).resolve()), "--server"], cwd=folder
            ),
        }
        for mode in ("auto", "legacy"):
            for name, params in servers.items():
                samples = await measure(params, mode, calls)
                print(
                    f"{name:<22} read_file round trip over stdio ({mode}): "
                    f"median {statistics.median(samples):.0f} us, "
                    f"mean {statistics.mean(samples):.0f} us, n={calls}"
                )


if __name__ == "__main__":
    if sys.argv[1:] == ["--server"]:
        reference_server()
    else:
        asyncio.run(main(str(Path(sys.argv[1]).resolve()), int(sys.argv[2]) if len(sys.argv) > 2 else 500))
