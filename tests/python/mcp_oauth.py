"""OAuth 2.1 on `/agent/mcp` with the official Python MCP SDK's client (`OAuthClientProvider`).

Run by `tests/tests/mcp/python_sdk.rs` (`.ci/mcp-python` makes the venv) against a todo server
with OAuth on, anonymous identities and no test identity header:
`python mcp_oauth.py <url of /agent/mcp> [<client metadata document URL>]`. For each generation
(the legacy `initialize` session and 2026-07-28) the SDK discovers the server from the 401,
registers itself (RFC 7591) or, given a document URL, uses it as its client id (a Client ID
Metadata Document the test serves; the server fetches it), and sends the person to the consent
page; the redirect handler acts as the person
in a browser of their own (a cookie jar: the page gives a newcomer an identity cookie, as the
console does), approves with the page's sealed request, and hands the redirect's `code`,
`state` and `iss` to the callback handler. With `OAUTH_PERSON=browser` the person is the test's
Chromium instead: the script prints `authorize <url>`, the test approves the page in the browser
and writes back the URL it landed on (the redirect URI is then `OAUTH_REDIRECT`). The SDK then lists the tools and dispatches.
Prints one `ok <case>` line per case; any failure raises (exit status 1).
"""

import asyncio
import os
import re
import sys
from urllib.parse import parse_qs, urljoin, urlparse

import httpx2
from mcp import Client
from mcp.client.auth import AuthorizationCodeResult, OAuthClientProvider, TokenStorage
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.shared.auth import OAuthClientInformationFull, OAuthClientMetadata, OAuthToken

URL = sys.argv[1]
DOCUMENT = sys.argv[2] if len(sys.argv) > 2 else None
# `OAUTH_PERSON=browser`: the person is the test's Chromium. The script prints
# `authorize <url>` and reads back the URL the browser landed on (OAUTH_REDIRECT's page).
IN_BROWSER = os.environ.get("OAUTH_PERSON") == "browser"
REDIRECT = os.environ.get("OAUTH_REDIRECT", "http://localhost:3999/callback")
PREFIX = "cimd " if DOCUMENT else ""


class Memory(TokenStorage):
    def __init__(self) -> None:
        self.tokens: OAuthToken | None = None
        self.client: OAuthClientInformationFull | None = None

    async def get_tokens(self) -> OAuthToken | None:
        return self.tokens

    async def set_tokens(self, tokens: OAuthToken) -> None:
        self.tokens = tokens

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        return self.client

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self.client = client_info


class Person:
    """The person at the consent page: their own browser (cookies), Approve."""

    def __init__(self) -> None:
        self.browser = httpx2.AsyncClient(follow_redirects=False)
        self.result: AuthorizationCodeResult | None = None
        self.pages = 0

    async def redirect_handler(self, authorization_url: str) -> None:
        if IN_BROWSER:
            await self.approve_in_browser(authorization_url)
            return
        page = await self.browser.get(authorization_url)
        assert page.status_code == 200, page.text
        assert page.headers["x-frame-options"] == "DENY", page.headers
        self.pages += 1
        if DOCUMENT:
            # The client's name is its document's, and the host publishing it is shown.
            assert "described by <code>localhost</code>" in page.text, page.text
        sealed = re.search(r'name="request" value="([^"]+)"', page.text).group(1)
        action = re.search(r'<form method="post" action="([^"]+)"', page.text).group(1)
        answer = await self.browser.post(
            urljoin(authorization_url, action),
            data={"request": sealed, "decision": "approve", "session": "new", "act": "1"},
        )
        assert answer.status_code == 303, answer.text
        query = parse_qs(urlparse(answer.headers["location"]).query)
        assert "error" not in query, query
        self.result = AuthorizationCodeResult(
            code=query["code"][0], state=query["state"][0], iss=query["iss"][0]
        )

    async def approve_in_browser(self, authorization_url: str) -> None:
        print(f"authorize {authorization_url}", flush=True)
        landed = await asyncio.get_running_loop().run_in_executor(None, sys.stdin.readline)
        assert landed.startswith(REDIRECT), landed
        self.pages += 1
        query = parse_qs(urlparse(landed.strip()).query)
        assert "error" not in query, query
        self.result = AuthorizationCodeResult(
            code=query["code"][0], state=query["state"][0], iss=query["iss"][0]
        )

    async def callback_handler(self) -> AuthorizationCodeResult:
        assert self.result is not None, "the consent page was not answered"
        return self.result


async def cases(mode: str) -> None:
    person = Person()
    storage = Memory()
    auth = OAuthClientProvider(
        server_url=URL,
        client_metadata=OAuthClientMetadata(
            client_name=f"Python SDK ({mode})",
            redirect_uris=[REDIRECT],
            grant_types=["authorization_code", "refresh_token"],
            response_types=["code"],
            token_endpoint_auth_method="none",
            scope="app:read app:act",
        ),
        storage=storage,
        redirect_handler=person.redirect_handler,
        callback_handler=person.callback_handler,
        client_metadata_url=DOCUMENT,
    )
    http = create_mcp_http_client(auth=auth)
    async with Client(streamable_http_client(URL, http_client=http), mode=mode) as c:
        names = [t.name for t in (await c.list_tools()).tools]
        assert "send_message" in names and "observe" in names, names
        assert person.pages == 1, person.pages
        if DOCUMENT:
            # No registration: the document's URL is the client id.
            assert storage.client.client_id == DOCUMENT, storage.client
        print(f"ok {PREFIX}{mode} consented and listed", flush=True)
        sent = await c.call_tool("send_message", {"msg": {"type": "add", "title": "from python"}})
        assert not sent.is_error, sent
        assert sent.structured_content["status"] == "dispatched", sent.structured_content
        state = (await c.call_tool("get_state", {})).structured_content["state"]
        titles = [t["title"] for t in state["todos"]]
        assert "from python" in titles, titles
        print(f"ok {PREFIX}{mode} dispatched", flush=True)
    await person.browser.aclose()


async def main() -> None:
    for mode in ["legacy", "2026-07-28"]:
        await cases(mode)


asyncio.run(main())
