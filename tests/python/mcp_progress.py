"""Long work as the official Python MCP SDK (PyPI `mcp`) sees it, on the todo example's `import`.

Run by `tests/tests/mcp/python_sdk.rs` (`.ci/mcp-python` makes the venv) against a todo server:
`python mcp_progress.py <url of /agent/mcp> <agent token>`. On both generations (the legacy
`initialize` session and 2026-07-28): a `do_import` call with a progress callback receives
`notifications/progress` while it waits and answers once the import is over; `cancel_work`
stops an import whose `do_import` call waits, and that call's drain says `cancelled`; a call
the client abandons (the SDK sends `notifications/cancelled` on the legacy session and aborts
the request's POST on 2026-07-28) stops the import it started. Prints one `ok <case>` line
per case; any failure raises (exit status 1).
"""

import asyncio
import sys

from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

URL, TOKEN = sys.argv[1], sys.argv[2]


def client(mode: str) -> Client:
    http = create_mcp_http_client(headers={"Authorization": f"Bearer {TOKEN}"})
    return Client(streamable_http_client(URL, http_client=http), mode=mode)


async def running(c: Client) -> list:
    observed = (await c.call_tool("observe", {})).structured_content
    return observed.get("work", [])


async def until_idle(c: Client) -> None:
    for _ in range(500):
        if not await running(c):
            return
        await asyncio.sleep(0.01)
    raise AssertionError("the import did not stop")


async def cases(mode: str) -> None:
    async with client(mode) as c:
        # Progress while the call waits.
        seen = []

        async def on_progress(progress, total, message):
            seen.append((progress, total, message))

        done = await c.call_tool("do_import", {"count": 30}, progress_callback=on_progress)
        assert not done.is_error, done
        body = done.structured_content
        assert body["status"] == "dispatched", body
        assert "cancelled" not in body["drain"], body
        assert len(seen) >= 2, seen
        assert seen[-1][0] == 30 and seen[-1][1] == 30, seen
        assert seen[-1][2] == "imported 30 of 30", seen
        assert [p for p, _, _ in seen] == sorted(p for p, _, _ in seen), seen
        print(f"ok {mode} progress", flush=True)

        # cancel_work while the call waits: its drain says cancelled.
        started = asyncio.Event()

        async def first(progress, total, message):
            if progress >= 10:
                started.set()

        waiting = asyncio.create_task(
            c.call_tool("do_import", {"count": 1000}, progress_callback=first)
        )
        await asyncio.wait_for(started.wait(), 10)
        cancelled = await c.call_tool("cancel_work", {"all": True})
        assert not cancelled.is_error, cancelled
        assert cancelled.structured_content["status"] == "cancelled", cancelled
        answer = (await asyncio.wait_for(waiting, 10)).structured_content
        assert answer["status"] == "dispatched", answer
        assert [w["by"] for w in answer["drain"]["cancelled"]] == ["agent"], answer
        await until_idle(c)
        again = await c.call_tool("cancel_work", {"all": True})
        assert again.structured_content["status"] == "not-running", again
        print(f"ok {mode} cancel_work", flush=True)

        # The client abandons its call: the import stops.
        started = asyncio.Event()
        abandoned = asyncio.create_task(
            c.call_tool("do_import", {"count": 1000}, progress_callback=first)
        )
        await asyncio.wait_for(started.wait(), 10)
        assert await running(c), "the import runs"
        abandoned.cancel()
        try:
            await abandoned
        except asyncio.CancelledError:
            pass
        await until_idle(c)
        log = (
            await c.call_tool("describe_recent_actions", {"kind": "cancelled", "n": 1})
        ).structured_content["entries"]
        assert log[0]["detail"] == "cancelled by the agent's MCP client", log
        print(f"ok {mode} abandoned call cancelled", flush=True)


async def main() -> None:
    for mode in ("legacy", "2026-07-28"):
        await cases(mode)


asyncio.run(main())
