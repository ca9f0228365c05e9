// An agent of the notes app on MCP, with the official TypeScript SDK (npm
// `@modelcontextprotocol/sdk`): connects to `/agent/mcp` with its bearer token, lists the
// tools, observes, adds a note.
//
// Usage: `node agent.mjs AGENT_TOKEN [BASE_URL]` (default http://127.0.0.1:8790), from a
// folder where `npm install @modelcontextprotocol/sdk` was run.

import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const [token, base = "http://127.0.0.1:8790"] = process.argv.slice(2);

// The bearer goes in the headers of every request the transport makes.
const transport = new StreamableHTTPClientTransport(new URL(`${base}/agent/mcp`), {
  requestInit: { headers: { Authorization: `Bearer ${token}` } },
});
const client = new Client({ name: "notes-agent", version: "0.1.0" });
await client.connect(transport);

const { tools } = await client.listTools();
console.log("tools:", tools.map((t) => t.name).join(" "));

const observed = await client.callTool({ name: "observe", arguments: {} });
console.log("notes:", JSON.stringify(observed.structuredContent.state.notes));

const added = await client.callTool({ name: "do_add", arguments: { text: "buy milk" } });
console.log("do_add:", added.structuredContent.status);

const state = await client.callTool({ name: "get_state", arguments: {} });
console.log("notes:", JSON.stringify(state.structuredContent.state.notes));

await client.close();
