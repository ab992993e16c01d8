"""The Lisps one REPL holds, and which of them is current.

lispshell's own Lisps are keyed by their name ("sbcl"), connections to someone's image by
their URL ("nrepl://127.0.0.1:7888"). Switching (`,lisp`, `,connect`) keeps the others
running, so definitions made in one are still there on coming back. The current key may
name nothing: after `,disconnect` of the last connection, or a `--connect` that failed, it
stays the address, so that nothing runs in its place until the person says so.

This object only keeps the set; starting, connecting and what is said about it are the
REPL's (lispshell/repl/app.py).
"""
from __future__ import annotations

from collections.abc import MutableMapping


class Sessions(MutableMapping):
    def __init__(self, lisp: str):
        self._by_key: dict = {}
        self.key = lisp            # the current session's key: a Lisp's name or a URL
        self.lisp = lisp           # the current session's Lisp (its Dialect's name)
        self.start_failed: dict[str, str] = {}   # Lisp -> why its background boot failed

    @property
    def current(self):
        """The current session, or None (not started yet, could not start, disconnected)."""
        return self._by_key.get(self.key)

    def make_current(self, key: str, lisp: str) -> None:
        self.key, self.lisp = key, lisp

    @property
    def on_a_connection_address(self) -> bool:
        """The current key is an address (connected or not), not a Lisp of lispshell's own."""
        return "://" in self.key

    def connections(self) -> list[str]:
        return [k for k, s in self._by_key.items() if s.is_connection]

    def close_all(self) -> None:
        """End every child Lisp and close every connection (no stray processes; the images
        behind connections run on)."""
        for session in list(self._by_key.values()):
            try:
                session.close()
            except Exception:     # one that will not close must not keep the others open
                pass
        self._by_key.clear()

    # The mapping: key -> session
    def __getitem__(self, key):
        return self._by_key[key]

    def __setitem__(self, key, session) -> None:
        self._by_key[key] = session

    def __delitem__(self, key) -> None:
        del self._by_key[key]

    def __iter__(self):
        return iter(self._by_key)

    def __len__(self) -> int:
        return len(self._by_key)
