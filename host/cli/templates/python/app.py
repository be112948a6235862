"""A Roost tool plugin in Python, built with componentize-py: the class
`Tool` lists the tools (with the JSON schema of their arguments) and runs
them. See README.md for the build."""

import json

from componentize_py_types import Err
from wit_world import exports
from wit_world.imports.types import ErrorCode, ToolAnnotations, ToolError, ToolGroup, ToolOutput, ToolSpec

from words import count_words

# The name the model calls: prefixed with the plugin's, so it clashes with no
# other plugin's. plugin.toml lists it under `tools` (Roost checks the names
# before compiling the component); keep the two in step.
TOOL_NAME = "__TOOL_NAME__"

COUNT_WORDS = ToolSpec(
    TOOL_NAME,
    "Count the words of a workspace text file",
    json.dumps({
        "type": "object",
        "properties": {"path": {"type": "string", "description": "Workspace-relative path of a text file"}},
        "required": ["path"],
    }),
    ToolGroup.READ,
    False,  # destructive
    ["path"],  # path arguments, checked against the task's scope before the call
    ToolAnnotations("Count words", True, False),  # title, idempotent, open-world
)


def _fail(code, message):
    raise Err(ToolError(code, message))


class Tool(exports.Tool):
    def tools(self):
        return [COUNT_WORDS]

    def call(self, name, args):
        if name != TOOL_NAME:
            _fail(ErrorCode.NOT_FOUND, f"unknown tool: {name}")
        try:
            path = json.loads(args)["path"]
        except (ValueError, KeyError, TypeError) as e:
            _fail(ErrorCode.INVALID_ARGS, f"invalid arguments: {e}")
        if not isinstance(path, str) or path.startswith("/") or ".." in path.split("/"):
            _fail(ErrorCode.INVALID_ARGS, f"{path}: a workspace-relative path, please")
        try:
            # The workspace is mounted read-only at /workspace.
            with open(f"/workspace/{path}", encoding="utf-8") as f:
                return ToolOutput(f"{count_words(f.read())} words", None)
        except FileNotFoundError:
            _fail(ErrorCode.NOT_FOUND, f"{path}: no such file")
        except OSError as e:
            _fail(ErrorCode.PERMISSION_DENIED, f"{path}: {e}")
