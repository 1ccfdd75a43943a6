"""What every tool call goes through before and after its body: strict arguments, one-line errors.

A model reads tool errors and retries from them, so an error must be one line that says what to
change and names the tool that fixes it:
- an argument the tool does not take is refused with the accepted names (schemas say
  ``additionalProperties: false``; nothing is silently dropped);
- a value the schema rejects is reported as ``tool: argument: problem`` without pydantic's
  boilerplate (error counts, input echoes, documentation URLs);
- every refusal opens ``tool: `` (not the MCP library's "Error executing tool tool: " on some);
- library messages written for the command line (``kenning restore X``) are restated with the
  tool to call (``memory_restore(id=X)``);
- an answer's text is compact JSON, not the SDK's indented form;
- a request sent before ``initialize`` is told so, where the SDK answers "Invalid request parameters"
  with nothing to act on.
"""

from __future__ import annotations

import json
import re
from typing import Any, Callable

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError, UnexpectedToolError
from mcp.shared.exceptions import MCPError
from mcp.types import INVALID_PARAMS, CallToolResult, TextContent
from pydantic import ValidationError

from kenning.commands.support import clip_values

_CLI_TO_TOOLS: list[tuple[re.Pattern[str], str]] = [
    (re.compile(r"`kenning list` shows the ids"), "memory_search or memory_list shows the ids"),
    (re.compile(r"`kenning restore ([^`]+)` brings it back"), r"memory_restore(id=\1) brings it back"),
    (re.compile(r"`kenning restore ([^`]+)` first"), r"memory_restore(id=\1) first"),
    (re.compile(r"(?:a person turns \w+ back on with|turn it on with): kenning config set (\w+) true"),
     r"only the user can turn it back on (the \1 setting); no tool changes it"),
    (re.compile(r"e\.g\. --reason '([^']*)'"), r"e.g. reason='\1'"),
    (re.compile(r"the excerpts must parallel the ids"), "claim_excerpts must parallel ids"),
    (re.compile(r"e\.g\. --scope (\S+)"), r'e.g. scopes=["\1"]'),
    # the markdown mirror's reasons
    (re.compile(r"run `kenning update (\S+) --scope ([^`]+)` \(repeat --scope for any other scope it keeps\)"),
     r'call memory_update(id=\1, scopes=["\2", …the other scopes it keeps])'),
    (re.compile(r"or `kenning restore` it"), "or memory_restore it"),
    (re.compile(r"settle it with `kenning update`, then export with --force"),
     "settle it with memory_update, then memory_export_markdown with force=True"),
    # the markdown mirror's folder
    (re.compile(r"`kenning export --markdown ([^`]+)`"), r"memory_export_markdown(directory=\1)"),
    (re.compile(r"run `kenning sync ([^`]+)` first \(or export with --force to overwrite them\)"),
     r"call memory_sync_markdown(directory=\1) first (or memory_export_markdown with force=True to overwrite them)"),
]


def for_tools(text: str) -> str:
    """A library message restated for a model: tool names instead of CLI commands, one line, a long
    value it quotes cut to its start and length as the command line cuts it (a 10 MB link target
    was echoed whole into the model's context)."""
    for pattern, replacement in _CLI_TO_TOOLS:
        text = pattern.sub(replacement, text)
    return " ".join(clip_values(text).split())


def describe_validation(tool: str, exc: ValidationError, shown: int = 3) -> str:
    """``tool: where: what; where: what`` for each problem (the first ``shown``, then how many more):
    a model told only of the first, and "1 more problem", fixes one and is refused again."""
    errors = exc.errors(include_url=False, include_input=False)
    parts = []
    for error in errors[:shown]:
        where = ".".join(str(part) for part in error.get("loc", ()) if part != "root") or "arguments"
        what = "is required" if error.get("type") == "missing" else error.get("msg", "is invalid")
        parts.append(f"{where}: {what}")
    rest = len(errors) - shown
    more = f" (and {rest} more problem{'s' if rest > 1 else ''})" if rest > 0 else ""
    return f"{tool}: {'; '.join(parts)}{more}"


async def before_initialize(ctx: Any, call_next: Any) -> Any:
    """Middleware: the SDK's refusal of a request that came before the handshake ("Invalid request
    parameters", empty data, the code of a malformed request) restated as what to send first."""
    try:
        return await call_next(ctx)
    except MCPError as exc:
        gate = (exc.error.code == INVALID_PARAMS and exc.error.message == "Invalid request parameters"
                and ctx.method != "initialize" and ctx.session.client_params is None)
        if not gate:
            raise
        raise MCPError(INVALID_PARAMS, f"{ctx.method} before initialize: this connection's first request must be "
                                       "initialize (then the notifications/initialized notification)") from None


def compact(result: Any) -> Any:
    """A tool answer's text as compact JSON: the SDK indents it by two spaces a level, about a quarter
    of a search's characters, which a model pays for in context and reads no better. The text stays
    the structured answer, key for key."""
    if isinstance(result, CallToolResult) and result.structured_content is not None and not result.is_error \
            and len(result.content) == 1 and isinstance(result.content[0], TextContent):
        text = json.dumps(result.structured_content, ensure_ascii=False, separators=(",", ":"), default=str)
        result.content = [TextContent(type="text", text=text)]
    return result


class StrictServer(MCPServer):
    """An MCPServer whose tools refuse unknown arguments and report bad ones on one line."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.middleware.append(before_initialize)
        self.hidden: Callable[[], set[str]] = set  # tools left out of tools/list now (a live setting turned off)

    async def list_tools(self) -> list[Any]:
        """Every tool but those ``hidden`` names now: read at each tools/list, so a setting changed by another
        process takes effect at the client's next listing. A hidden tool called anyway answers why it is off."""
        hidden = self.hidden()
        return [tool for tool in await super().list_tools() if tool.name not in hidden]

    def seal_schemas(self) -> None:
        """Mark every registered tool's input schema closed (call after the last tool is added)."""
        for tool in self._tool_manager.list_tools():
            tool.parameters["additionalProperties"] = False

    async def call_tool(self, name: str, arguments: dict[str, Any], context: Any = None) -> Any:
        tool = self._tool_manager.get_tool(name)
        if tool is not None:
            accepted = list(tool.parameters.get("properties", {}))
            unknown = [key for key in arguments if key not in accepted]
            if unknown:
                raise ToolError(f"{name}: unknown argument {unknown[0]!r}; {name} accepts: {', '.join(accepted)}")
            try:
                tool.fn_metadata.validate_arguments(arguments)
            except ValidationError as exc:
                raise ToolError(describe_validation(name, exc)) from None
        try:
            return compact(await super().call_tool(name, arguments, context))
        except UnexpectedToolError:
            raise  # a crash: the library's generic text, logged as one
        except ToolError as exc:  # the library writes "Error executing tool <name>: " before a refusal
            prefix = f"Error executing tool {name}: "
            text = str(exc)
            if not text.startswith(prefix):
                raise
            raise ToolError(f"{name}: {text[len(prefix):]}") from exc.__cause__
