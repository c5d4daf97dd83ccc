"""The five read-only, model-facing session tools (SPEC §8).

Mount :class:`SessionQueryTools` in an agent loop: give the model
:attr:`SessionQueryTools.definitions` (or the OpenAI / Anthropic dicts), add
:attr:`SessionQueryTools.prompt_section` to the system prompt, and dispatch each tool call to
:meth:`SessionQueryTools.call` with the :class:`ToolCaller` of the agent making it.

Modules, one concept each: ``specs`` (each tool as one record: name, description, schema,
argument parsing, workflow; the prompt text), ``schemas`` (JSON Schema building blocks and
the OpenAI strict form), ``validation`` (checking raw model arguments against a schema),
``arguments`` (the semantic checks the tools' arguments share), ``access`` (caller identity
and workspace authorization), ``boundary`` (the error sanitizer), ``operations`` (the
workflows), ``render`` (text output) and ``toolkit`` (the public class).
"""

from sessionquery.tools.access import ToolCaller
from sessionquery.tools.schemas import ToolDefinition
from sessionquery.tools.toolkit import SessionQueryTools, ToolResult

__all__ = ["SessionQueryTools", "ToolCaller", "ToolDefinition", "ToolResult"]
