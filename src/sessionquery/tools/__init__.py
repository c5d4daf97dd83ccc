"""The five read-only, model-facing session tools (SPEC §8).

Mount :class:`SessionQueryTools` in an agent loop: give the model
:attr:`SessionQueryTools.definitions` (or the OpenAI / Anthropic dicts), add
:attr:`SessionQueryTools.prompt_section` to the system prompt, and dispatch each tool call to
:meth:`SessionQueryTools.call` with the :class:`ToolCaller` of the agent making it.

Modules, one concept each: ``schemas`` (definitions and prompt text), ``validation``
(checking raw model arguments against the schemas), ``arguments`` (normalising them into
service requests), ``access`` (caller identity and workspace
authorization), ``boundary`` (the error sanitizer), ``operations`` (the five workflows),
``render`` (text output) and ``toolkit`` (the public class).
"""

from sessionquery.tools.access import ToolCaller
from sessionquery.tools.schemas import ToolDefinition
from sessionquery.tools.toolkit import SessionQueryTools, ToolResult

__all__ = ["SessionQueryTools", "ToolCaller", "ToolDefinition", "ToolResult"]
