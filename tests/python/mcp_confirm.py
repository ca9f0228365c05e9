"""Confirmation in the MCP client, driven by the official Python MCP SDK (PyPI `mcp`).

Run by `tests/tests/mcp/python_sdk.rs` (`.ci/mcp-python` makes the venv) against a counter server
with `McpOptions::confirm_in_client` on: `python mcp_confirm.py <url of /agent/mcp> <agent token>`.
On both generations (the legacy `initialize` session and 2026-07-28) the SDK's elicitation
callback approves, rejects and edits a `delete` (`@requiresConfirm`); on 2026-07-28 a tampered
`requestState` is refused and decides nothing. Prints one `ok <case>` line per case; any failure
raises (exit status 1).
"""

import asyncio
import json
import sys

from mcp import Client, types
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

URL, TOKEN = sys.argv[1], sys.argv[2]

# What the callback answers next, and what it was asked.
answer: dict = {}
asked: list = []


async def on_elicit(context, params):
    asked.append(params.message)
    return types.ElicitResult(**answer)


def client(mode: str) -> Client:
    http = create_mcp_http_client(headers={"Authorization": f"Bearer {TOKEN}"})
    transport = streamable_http_client(URL, http_client=http)
    return Client(transport, mode=mode, elicitation_callback=on_elicit)


def structured(result) -> dict:
    assert not result.is_error, result
    return result.structured_content


async def delete(c: Client, row: str):
    msg = {"msg": {"type": "delete", "id": row}, "reason": "python cleanup"}
    return await c.call_tool("send_message", msg)


async def cases(mode: str) -> None:
    async with client(mode) as c:
        global answer
        answer = {"action": "accept", "content": {"decision": "approve"}}
        done = structured(await delete(c, f"{mode}-1"))
        assert done["status"] == "confirmed", done
        assert done["stateAfter"]["lastDelete"] == f"{mode}-1", done
        assert "deleting cannot be undone" in asked[-1] and "python cleanup" in asked[-1], asked[-1]
        print(f"ok {mode} approve", flush=True)

        answer = {"action": "accept", "content": {"decision": "reject"}}
        done = structured(await delete(c, f"{mode}-2"))
        assert done == {"status": "rejected", "reason": "user-cancelled"}, done
        print(f"ok {mode} reject", flush=True)

        edited = json.dumps({"id": f"{mode}-edited"})
        answer = {"action": "accept", "content": {"decision": "approve", "payload": edited}}
        done = structured(await delete(c, f"{mode}-3"))
        assert done["status"] == "confirmed", done
        assert done["stateAfter"]["lastDelete"] == f"{mode}-edited", done
        assert done["msg"] == {"type": "delete", "id": f"{mode}-edited"}, done
        print(f"ok {mode} edit", flush=True)

        if mode == "legacy":
            return
        # The loop driven by hand: the SDK hands the input_required result over as it is.
        args = {"msg": {"type": "delete", "id": f"{mode}-4"}}
        first = await c.session.call_tool("send_message", args, allow_input_required=True)
        assert isinstance(first, types.InputRequiredResult), first
        assert set(first.input_requests) == {"confirm"}, first
        state = first.request_state
        responses = {"confirm": {"action": "accept", "content": {"decision": "approve"}}}
        flipped = "A" if state[-5] != "A" else "B"
        tampered = state[:-5] + flipped + state[-4:]
        refused = await c.session.call_tool(
            "send_message",
            args,
            input_responses=responses,
            request_state=tampered,
            allow_input_required=True,
        )
        assert refused.is_error, refused
        assert "does not verify" in refused.content[0].text, refused
        # Nothing was decided: the genuine state still approves.
        done = await c.session.call_tool(
            "send_message",
            args,
            input_responses=responses,
            request_state=state,
            allow_input_required=True,
        )
        assert structured(done)["stateAfter"]["lastDelete"] == f"{mode}-4", done
        print(f"ok {mode} tampered", flush=True)


async def main() -> None:
    await cases("legacy")
    await cases("2026-07-28")


asyncio.run(main())
