"""`lispshell mcp`: the tool registry served over the Model Context Protocol.

Modules, in reading order:
  main.py     the command line (flags, config) and the two transports' entry points
  handshake.py  the first stdio answers (initialize, tools/list), sent before the SDK is loaded
  wire.py     the stdio wire: every line answered, malformed ones here
  server.py   the MCP server: tools/list and tools/call over the one registry
  runtime.py  what the tools may use: the root, the dialect, the live Lisp image
  consent.py  the eval gate's confirmation, asked through MCP elicitation
  http.py     the streamable HTTP transport behind a bearer token

Nothing here is imported by the REPL: the MCP SDK costs about a second to import (which is
why handshake.py answers a client's first messages without it).
"""
