"""Bencode, the framing nREPL speaks: `i42e`, `4:spam`, `l...e`, `d...e` (keys sorted).

Our own twenty lines rather than a PyPI package: the packages there (bencode.py, bencode2,
fastbencode...) decode one complete byte string, while a socket delivers messages in pieces
and several per read, so finding where one ends already takes a parser. `Decoder.feed` is that
parser: it returns each message as soon as its last byte arrives and keeps the rest.
"""
from __future__ import annotations


def encode(value) -> bytes:
    out: list[bytes] = []
    _encode(value, out)
    return b"".join(out)


def _encode(value, out: list[bytes]) -> None:
    if isinstance(value, bool):
        value = int(value)
    if isinstance(value, int):
        out.append(b"i%de" % value)
    elif isinstance(value, (str, bytes)):
        raw = value.encode("utf-8", errors="replace") if isinstance(value, str) else value
        out.append(b"%d:" % len(raw))
        out.append(raw)
    elif isinstance(value, (list, tuple)):
        out.append(b"l")
        for item in value:
            _encode(item, out)
        out.append(b"e")
    elif isinstance(value, dict):
        out.append(b"d")
        for key in sorted(value):
            _encode(key, out)
            _encode(value[key], out)
        out.append(b"e")
    else:
        raise TypeError(f"cannot bencode {type(value).__name__}")


class DecodeError(ValueError):
    """The bytes are not bencode: the peer is not speaking nREPL."""


class _Incomplete(Exception):
    pass


class Decoder:
    """Feed it bytes as they arrive; get back each complete value (strings decoded as UTF-8)."""

    MAX_DEPTH = 64

    def __init__(self) -> None:
        self._buf = bytearray()

    def feed(self, data: bytes) -> list:
        self._buf += data
        values = []
        pos = 0
        while pos < len(self._buf):
            try:
                value, pos2 = self._parse(pos, 0)
            except _Incomplete:
                break
            values.append(value)
            pos = pos2
        if pos:
            del self._buf[:pos]
        return values

    def _parse(self, pos: int, depth: int):
        buf = self._buf
        if pos >= len(buf):
            raise _Incomplete
        c = buf[pos]
        if c == 0x69:  # i
            end = buf.find(b"e", pos)
            if end < 0:
                raise _Incomplete
            try:
                return int(buf[pos + 1:end]), end + 1
            except ValueError:
                raise DecodeError(f"bad integer at byte {pos}") from None
        if 0x30 <= c <= 0x39:  # a digit: <length>:<bytes>
            colon = buf.find(b":", pos, pos + 21)
            if colon < 0:
                if len(buf) - pos > 20:
                    raise DecodeError(f"bad string length at byte {pos}")
                raise _Incomplete
            try:
                n = int(buf[pos:colon])
            except ValueError:
                raise DecodeError(f"bad string length at byte {pos}") from None
            end = colon + 1 + n
            if end > len(buf):
                raise _Incomplete
            return bytes(buf[colon + 1:end]).decode("utf-8", errors="replace"), end
        if c in (0x6C, 0x64):  # l, d
            if depth >= self.MAX_DEPTH:
                raise DecodeError("nested too deep")
            items = []
            pos += 1
            while True:
                if pos >= len(buf):
                    raise _Incomplete
                if buf[pos] == 0x65:  # e
                    pos += 1
                    break
                item, pos = self._parse(pos, depth + 1)
                items.append(item)
            if c == 0x6C:
                return items, pos
            return dict(zip(items[0::2], items[1::2])), pos
        raise DecodeError(f"unexpected byte {chr(c)!r} at byte {pos}")
