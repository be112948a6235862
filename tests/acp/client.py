"""A second ACP client for `roost acp`: the Agent Client Protocol's Python SDK
(`agent-client-protocol` on PyPI, pinned by scripts/test.sh), which checks
every message it receives against the protocol's schema with pydantic.

    python3 client.py ROOST DATA_DIR WORKSPACE SCRIPT CONFIG

runs one session: initialize, session/new, a prompt whose write the client
allows once, a second prompt that answers the review, session/list; then
prints what it saw as one JSON object on stdout (the test asserts on it).
"""

import asyncio
import json
import sys

import acp
from acp.schema import AllowedOutcome, ClientCapabilities, Implementation


class Editor:
    """Records every update; allows each permission once."""

    def __init__(self):
        self.updates = []
        self.asked = []

    async def request_permission(self, session_id, tool_call, options, **kwargs):
        self.asked.append({"title": tool_call.title, "options": [o.kind for o in options]})
        allow = next(o for o in options if o.kind == "allow_once")
        return acp.RequestPermissionResponse(
            outcome=AllowedOutcome(outcome="selected", option_id=allow.option_id)
        )

    async def session_update(self, session_id, update, **kwargs):
        self.updates.append(update.model_dump(mode="json", by_alias=True, exclude_none=True))

    async def write_text_file(self, *args, **kwargs):
        raise acp.RequestError.method_not_found("fs/write_text_file")

    async def read_text_file(self, *args, **kwargs):
        raise acp.RequestError.method_not_found("fs/read_text_file")


async def main(roost, data, workspace, script, config):
    editor = Editor()
    args = [
        "--data-dir", data, "acp", "--script", script,
        "--approve", "read", "--workspace", workspace,
    ]
    async with acp.spawn_agent_process(
        editor, roost, *args, env={"ROOST_CONFIG": config}
    ) as (conn, _process):
        init = await conn.initialize(
            protocol_version=acp.PROTOCOL_VERSION,
            client_capabilities=ClientCapabilities(),
            client_info=Implementation(name="python-sdk-test", version="1"),
        )
        session = await conn.new_session(cwd=workspace, mcp_servers=[])
        first = await conn.prompt(
            session_id=session.session_id, prompt=[acp.text_block("write b.txt")]
        )
        second = await conn.prompt(
            session_id=session.session_id, prompt=[acp.text_block("one more check")]
        )
        listed = await conn.list_sessions()
    print(
        json.dumps(
            {
                "protocol_version": init.protocol_version,
                "auth_methods": [m.model_dump(mode="json", by_alias=True) for m in init.auth_methods or []],
                "load_session": init.agent_capabilities.load_session,
                "modes": [m.id for m in session.modes.available_modes] if session.modes else [],
                "stops": [first.stop_reason, second.stop_reason],
                "updates": editor.updates,
                "asked": editor.asked,
                "listed": [s.session_id for s in listed.sessions],
            }
        )
    )


if __name__ == "__main__":
    asyncio.run(main(*sys.argv[1:6]))
