"""An agent of the notes app on MCP, with the official Python SDK (PyPI `mcp` 2.x): connects
to `/agent/mcp` with its bearer token, lists the tools, observes, adds a note.

Usage: `python agent.py AGENT_TOKEN [BASE_URL]` (default http://127.0.0.1:8790).
"""

import asyncio
import json
import sys

import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

TOKEN = sys.argv[1]
BASE = sys.argv[2] if len(sys.argv) > 2 else "http://127.0.0.1:8790"


async def main() -> None:
    # The SDK takes the HTTP client to use: the bearer goes in its headers.
    headers = {"Authorization": f"Bearer {TOKEN}"}
    async with httpx2.AsyncClient(headers=headers, timeout=30) as http:
        transport = streamable_http_client(f"{BASE}/agent/mcp", http_client=http)
        async with Client(transport) as client:
            tools = await client.list_tools()
            print("tools:", " ".join(t.name for t in tools.tools))

            observed = await client.call_tool("observe", {})
            print("notes:", json.dumps(observed.structured_content["state"]["notes"]))

            added = await client.call_tool("do_add", {"text": "buy milk"})
            print("do_add:", added.structured_content["status"])

            state = await client.call_tool("get_state", {})
            print("notes:", json.dumps(state.structured_content["state"]["notes"]))


asyncio.run(main())
