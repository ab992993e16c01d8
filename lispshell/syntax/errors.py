"""The one error type of `syntax/`: what fails, as a stable code, a message and any extra
fields (line, col, limit, the client's stack...).

It crosses into `tools/` unchanged: the registry's `ToolError` is a subclass, and
`call_tool` answers every one of them as `{"ok": false, "error": exc.to_dict()}`. So a
structural operation raises, and no tool converts anything by hand.
"""
from __future__ import annotations


class StructureError(Exception):
    """A failure with a stable code, a message and extra fields (all JSON-able)."""

    def __init__(self, code: str, message: str, **extra):
        super().__init__(message)
        self.code = code
        self.message = message
        self.extra = extra

    def to_dict(self) -> dict:
        return {"code": self.code, "message": self.message, **self.extra}
