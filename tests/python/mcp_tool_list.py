"""The tool list as hosts need it, read by the official Python MCP SDK (PyPI `mcp`).

Run by `tests/tests/mcp/python_sdk.rs` (`.ci/mcp-python` makes the venv) against a todo server:
`python mcp_tool_list.py <url of /agent/mcp> <agent token>`. On both generations (the legacy
`initialize` session and 2026-07-28): the list is the same before and after a toggle that opens
`clearCompleted`'s gate; `do_clearCompleted` called while the gate is shut answers a tool error
with the reason and what is available now, and dispatches nothing; every tool carries a title
and the four hints, reads `readOnlyHint: true`, the rest an explicit `destructiveHint`. Prints
one `ok <case>` line per case; any failure raises (exit status 1).
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


def wire(tools) -> list:
    return [t.model_dump(mode="json", by_alias=True, exclude_none=True) for t in tools]


async def cases(mode: str) -> None:
    async with client(mode) as c:
        before = wire((await c.list_tools()).tools)
        names = [t["name"] for t in before]
        assert "do_clearCompleted" in names and "do_toggle" in names, names

        # Shut now (nothing done): a tool error that says why and what to do instead.
        refused = await c.call_tool("do_clearCompleted", {})
        assert refused.is_error, refused
        body = refused.structured_content
        assert body["status"] == "rejected" and body["reason"] == "unavailable", body
        assert "do_toggle" in body["availableNow"], body
        assert "do_clearCompleted" not in body["availableNow"], body
        print(f"ok {mode} closed tool refused", flush=True)

        state = (await c.call_tool("get_state", {})).structured_content["state"]
        first = state["todos"][0]["id"]
        done = await c.call_tool("do_toggle", {"id": first})
        assert not done.is_error, done
        after = wire((await c.list_tools()).tools)
        assert after == before, "the list moved after a toggle"
        # Open now: proposed to the human (`@requiresConfirm`), not refused.
        opened = await c.call_tool("do_clearCompleted", {"_reason": "tidy up"})
        assert not opened.is_error, opened
        assert opened.structured_content["status"] == "pending-confirmation", opened
        print(f"ok {mode} list unchanged by a toggle", flush=True)
        # Back as it was, for the other generation: the proposal withdrawn, the todo not done.
        confirm_id = opened.structured_content["confirmId"]
        withdrawn = await c.call_tool("withdraw_proposal", {"confirmId": confirm_id})
        assert not withdrawn.is_error, withdrawn
        assert not (await c.call_tool("do_toggle", {"id": first})).is_error

        for tool in after:
            hints = tool.get("annotations", {})
            assert tool.get("title") or hints.get("title"), tool["name"]
            for hint in ("readOnlyHint", "destructiveHint", "idempotentHint", "openWorldHint"):
                assert isinstance(hints.get(hint), bool), (tool["name"], hint, hints)
            if tool["name"].startswith("do_"):
                assert hints["readOnlyHint"] is False, tool["name"]
        print(f"ok {mode} hints on every tool", flush=True)


async def main() -> None:
    await cases("legacy")
    await cases("2026-07-28")


asyncio.run(main())
