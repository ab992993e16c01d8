"""The tool registry: `call_tool(name, arguments)` and the list both the REPL's LLM and MCP use."""
from lispshell.tools.registry import (Tool, ToolContext, ToolError, all_tools, call_tool,
                                      get_tool, register, result_text)

__all__ = ["Tool", "ToolContext", "ToolError", "all_tools", "call_tool", "get_tool",
           "register", "result_text"]
