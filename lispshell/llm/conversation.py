"""The conversation: the list of Messages API messages, and the invariants the API enforces.

Whatever happens (a cancelled stream, a refused eval, a tool that raised, an API error in the
middle of a stream, `max_tokens` cutting a tool call, a crash before the log was complete),
`repair()` brings the history back to something the API accepts:

- the first message is from the user and roles alternate;
- every assistant `tool_use` is answered, first thing in the next user message, by a
  `tool_result` with its id; no `tool_result` answers nothing; ids are unique;
- no empty or whitespace-only text block, no message without content.

The person's own evals enter as if the model had called `eval` (`record_eval`), which is how
"add seven to that" after `(+ 2 3)` works.

Messages are plain JSON-able dicts, so the log is just JSON lines. The log is append-only: each
change writes one line `{"at": i, "messages": [...]}` meaning "keep the first i messages, then
these"; an append writes only the new message, a rollback writes only its length.
"""
from __future__ import annotations

import copy
import json
import os
import secrets
import time
from pathlib import Path
from typing import Any, Iterable

INTERRUPTED_RESULT = "No result: the call was interrupted before it ran or finished."
DROPPED_NOTE = "[Earlier turns of this conversation were dropped to fit the context window.]"
START_NOTE = "[The person is working at the lispshell REPL; their own evaluations follow as eval calls.]"


def new_id() -> str:
    """A tool_use id of our own (synthetic evals): unique and in the API's alphabet."""
    return "toolu_ls" + secrets.token_hex(10)


def _blank(text: Any) -> bool:
    return not isinstance(text, str) or not text.strip()


def _blocks(message: dict) -> list[dict]:
    c = message.get("content")
    if isinstance(c, str):
        return [] if _blank(c) else [{"type": "text", "text": c}]
    return list(c or [])


def tool_uses(message: dict) -> list[dict]:
    return [b for b in _blocks(message) if b.get("type") == "tool_use"]


class Conversation:
    def __init__(self, path: Path | None = None, meta: dict | None = None):
        self.messages: list[dict] = []
        self.path = path
        self.meta = meta or {}
        self._saved: list[str] = []  # JSON of each message as last written to the log
        self.dropped_evals: list[str] = []  # code of evals trimmed away, for the note
        self._header_written = path is not None and path.exists() and path.stat().st_size > 0
        self._torn = False

    # ------------------------------------------------------------------ building
    def add_user_text(self, text: str) -> None:
        """The person's question (or a note). Joins the last user message if there is one."""
        if _blank(text):
            return
        block = {"type": "text", "text": text}
        if self.messages and self.messages[-1]["role"] == "user":
            self.messages[-1]["content"] = _blocks(self.messages[-1]) + [block]
        else:
            self.messages.append({"role": "user", "content": [block]})
        self.save()

    def add_assistant(self, content: Iterable[dict]) -> list[dict]:
        """The model's message, cleaned: empty text dropped, trailing whitespace trimmed.
        Nothing is stored when nothing is left (no empty assistant turn). Returns what was kept."""
        kept = []
        for b in content:
            b = dict(b)
            if b.get("type") == "text":
                if _blank(b.get("text")):
                    continue
                b = {"type": "text", "text": b["text"].rstrip()}
            elif b.get("type") == "tool_use":
                b = {"type": "tool_use", "id": b["id"], "name": b["name"],
                     "input": b.get("input") if isinstance(b.get("input"), dict) else {}}
            else:
                continue  # thinking and other blocks are not kept
            kept.append(b)
        if not kept:
            return []
        if not self.messages:
            self.messages.append({"role": "user", "content": [{"type": "text", "text": START_NOTE}]})
        if self.messages[-1]["role"] == "assistant":
            # Only happens after a repair dropped the user turn between: join them.
            self.messages[-1]["content"] = _blocks(self.messages[-1]) + kept
        else:
            self.messages.append({"role": "assistant", "content": kept})
        self.save()
        return kept

    def add_tool_results(self, results: list[tuple[str, str, bool]], note: str = "") -> None:
        """Answer the last assistant message's tool calls: [(tool_use_id, text, is_error)].
        The results go first in a new user message; `note` (if any) follows them as text."""
        blocks = [_result_block(i, text, err) for i, text, err in results]
        if not _blank(note):
            blocks.append({"type": "text", "text": note})
        if not blocks:
            return
        self.messages.append({"role": "user", "content": blocks})
        self.save()

    def record_eval(self, code: str, result_text: str, is_error: bool = False, *,
                    tool: str = "eval", tool_input: dict | None = None) -> str:
        """The person's own eval, as if the model had called `eval` (or what they did as the
        model's `tool` with `tool_input`: their ,time is its `time`). Returns the tool_use
        id."""
        tid = new_id()
        use = {"type": "tool_use", "id": tid, "name": tool,
               "input": tool_input if tool_input is not None else {"code": code}}
        if not self.messages:
            self.messages.append({"role": "user", "content": [{"type": "text", "text": START_NOTE}]})
        if self.messages[-1]["role"] == "assistant" and not tool_uses(self.messages[-1]):
            self.messages[-1]["content"] = _blocks(self.messages[-1]) + [use]
        else:
            self.repair(save=False)  # an unanswered call at the end gets its result first
            self.messages.append({"role": "assistant", "content": [use]})
        self.messages.append({"role": "user", "content": [_result_block(tid, result_text, is_error)]})
        self.save()
        return tid

    def checkpoint(self) -> int:
        return len(self.messages)

    def rollback(self, checkpoint: int) -> None:
        del self.messages[checkpoint:]
        self.save()

    # ------------------------------------------------------------------ invariants
    def repair(self, save: bool = True) -> list[str]:
        """Make the history valid for the API whatever state it was left in. Returns what it fixed."""
        fixed: list[str] = []
        msgs: list[dict] = []
        for m in self.messages:
            if m.get("role") not in ("user", "assistant"):
                fixed.append("dropped a message with an unknown role")
                continue
            blocks = []
            for b in _blocks(m):
                if b.get("type") == "text" and _blank(b.get("text")):
                    fixed.append("dropped an empty text block")
                    continue
                if b.get("type") == "tool_result":
                    b = dict(b)
                    if _blank(b.get("content")) and not isinstance(b.get("content"), list):
                        b["content"] = "(no output)"
                blocks.append(b)
            if not blocks:
                fixed.append(f"dropped an empty {m['role']} message")
                continue
            if msgs and msgs[-1]["role"] == m["role"]:
                fixed.append(f"joined two {m['role']} messages in a row")
                msgs[-1] = {"role": m["role"], "content": _merge(msgs[-1]["content"], blocks)}
            else:
                msgs.append({"role": m["role"], "content": blocks})
        if msgs and msgs[0]["role"] != "user":
            msgs.insert(0, {"role": "user", "content": [{"type": "text", "text": START_NOTE}]})
            fixed.append("added a first user message")

        # Tool pairs: every tool_use answered first thing in the next user message; ids unique.
        seen: set[str] = set()
        out: list[dict] = []
        i = 0
        while i < len(msgs):
            m = msgs[i]
            if m["role"] == "assistant":
                blocks = []
                for b in m["content"]:
                    if b.get("type") == "tool_use":
                        if b.get("id") in seen or not isinstance(b.get("id"), str):
                            fixed.append("renamed a duplicate tool_use id")
                            b = {**b, "id": new_id()}
                        seen.add(b["id"])
                    blocks.append(b)
                m = {"role": "assistant", "content": blocks}
                out.append(m)
                ids = [b["id"] for b in blocks if b.get("type") == "tool_use"]
                nxt = msgs[i + 1] if i + 1 < len(msgs) else None
                user_blocks = list(nxt["content"]) if nxt else []
                results = {b.get("tool_use_id"): b for b in user_blocks if b.get("type") == "tool_result"}
                others = [b for b in user_blocks if b.get("type") != "tool_result"]
                ordered = []
                for tid in ids:
                    if tid in results:
                        ordered.append(results.pop(tid))
                    else:
                        fixed.append(f"answered the unanswered tool call {tid}")
                        ordered.append(_result_block(tid, INTERRUPTED_RESULT, True))
                if results:
                    fixed.append("dropped tool results that answered no call")
                new_user = ordered + others
                if new_user:
                    out.append({"role": "user", "content": new_user})
                i += 2 if nxt else 1
            else:
                blocks = [b for b in m["content"] if b.get("type") != "tool_result"]
                if len(blocks) != len(m["content"]):
                    fixed.append("dropped tool results that answered no call")
                if blocks:
                    if out and out[-1]["role"] == "user":
                        out[-1] = {"role": "user", "content": out[-1]["content"] + blocks}
                    else:
                        out.append({"role": "user", "content": blocks})
                i += 1
        # A user message emptied of stray results may have left two assistants in a row.
        final: list[dict] = []
        for m in out:
            if final and final[-1]["role"] == m["role"]:
                final[-1] = {"role": m["role"], "content": _merge(final[-1]["content"], m["content"])}
            else:
                final.append(m)
        if final and final[0]["role"] != "user":
            final.insert(0, {"role": "user", "content": [{"type": "text", "text": START_NOTE}]})
        self.messages = final
        if save:
            self.save()
        return fixed

    def problems(self) -> list[str]:
        """What the API would refuse in the current history (empty when valid). For tests and asserts."""
        probs = []
        ids: set[str] = set()
        for i, m in enumerate(self.messages):
            blocks = _blocks(m)
            if not blocks:
                probs.append(f"message {i} is empty")
            if i == 0 and m["role"] != "user":
                probs.append("first message is not from the user")
            if i and self.messages[i - 1]["role"] == m["role"]:
                probs.append(f"two {m['role']} messages in a row at {i}")
            for b in blocks:
                if b.get("type") == "text" and _blank(b.get("text")):
                    probs.append(f"empty text block in message {i}")
                if b.get("type") == "tool_use":
                    if b["id"] in ids:
                        probs.append(f"duplicate id {b['id']}")
                    ids.add(b["id"])
            if m["role"] == "assistant":
                want = [b["id"] for b in tool_uses(m)]
                if want:
                    nxt = _blocks(self.messages[i + 1]) if i + 1 < len(self.messages) else []
                    got = [b.get("tool_use_id") for b in nxt[:len(want)] if b.get("type") == "tool_result"]
                    if sorted(got) != sorted(want):
                        probs.append(f"tool calls of message {i} not answered first in the next")
        return probs

    # ------------------------------------------------------------------ context limit
    def estimate_tokens(self) -> int:
        return len(json.dumps(self.messages, ensure_ascii=False)) // 3

    def trim_to(self, budget_tokens: int) -> int:
        """Drop the oldest turns until the estimate fits `budget_tokens`, never splitting a tool
        pair, and leave a note that lists the code evaluated in the dropped part (definitions
        made there still exist in the image). Returns how many messages were dropped."""
        if self.estimate_tokens() <= budget_tokens or len(self.messages) < 3:
            return 0
        # Cut points are user messages; tool results at the head of the new first message
        # lose their call, so they are removed and the note says so.
        cuts = [j for j in range(2, len(self.messages)) if self.messages[j]["role"] == "user"]
        if not cuts:
            return 0
        for cut in cuts:
            evals = list(self.dropped_evals)
            for m in self.messages[:cut]:
                for b in tool_uses(m):
                    if b["name"] == "eval" and isinstance(b["input"].get("code"), str):
                        code = " ".join(b["input"]["code"].split())
                        evals.append(code if len(code) <= 100 else code[:99] + "…")
            head = self.messages[cut]
            rest = [b for b in _blocks(head) if b.get("type") != "tool_result"
                    and not str(b.get("text", "")).startswith(DROPPED_NOTE)]
            note = DROPPED_NOTE
            if any(b.get("type") == "tool_result" for b in _blocks(head)):
                note += " (Results of calls made in the dropped part were removed.)"
            listed = evals[-30:]
            while listed and len("\n".join(listed)) // 3 > budget_tokens // 5:
                listed = listed[len(listed) // 2 + 1:]  # the note may take a fifth at most
            if listed:
                note += (" Code evaluated in the dropped part (its definitions still exist in "
                         "the image), oldest first:\n" + "\n".join(listed))
            candidate = [{"role": "user", "content": [{"type": "text", "text": note}] + rest}] \
                + self.messages[cut + 1:]
            if len(json.dumps(candidate, ensure_ascii=False)) // 3 <= budget_tokens or cut == cuts[-1]:
                break
        self.dropped_evals = listed
        self.messages = candidate
        self.repair()
        return cut

    # ------------------------------------------------------------------ request form
    def for_request(self, tool_names: Iterable[str] | bool | None = None) -> list[dict]:
        """A deep copy for the API. Calls of tools that are not among `tool_names` (the gate
        is off, so no `eval`; a resumed conversation used other tool groups) become plain
        text, so the request still validates. `None` keeps every call."""
        self.repair(save=False)
        msgs = copy.deepcopy(self.messages)
        if tool_names is None or tool_names is True:
            return msgs
        if tool_names is False:  # the old form: only `eval` is missing
            sent = {b["name"] for m in msgs for b in tool_uses(m)} - {"eval"}
        else:
            sent = set(tool_names)
        gone = {b["id"]: b for m in msgs for b in tool_uses(m) if b["name"] not in sent}
        if not gone:
            return msgs
        out = []
        for m in msgs:
            blocks = []
            for b in m["content"]:
                if b.get("type") == "tool_use" and b["id"] in gone:
                    blocks.append({"type": "text", "text": f"[{b['name']}] {_call_text(b)}"})
                elif b.get("type") == "tool_result" and b.get("tool_use_id") in gone:
                    name = gone[b["tool_use_id"]]["name"]
                    blocks.append({"type": "text", "text": f"[{name} result] {_result_text(b)}"})
                else:
                    blocks.append(b)
            # results (kept) must still come first
            blocks.sort(key=lambda b: b.get("type") != "tool_result")
            out.append({"role": m["role"], "content": blocks})
        return out

    # ------------------------------------------------------------------ persistence
    def save(self) -> None:
        """Append what changed since the last save (append-only; see the module docstring)."""
        if self.path is None:
            return
        current = [json.dumps(m, ensure_ascii=False, sort_keys=True) for m in self.messages]
        at = 0
        while at < min(len(current), len(self._saved)) and current[at] == self._saved[at]:
            at += 1
        if at == len(current) == len(self._saved):
            return
        lines = []
        if not self._header_written:
            lines.append(json.dumps({"lispshell_conversation": 1, "started": time.time(),
                                     **self.meta}))
            self._header_written = True
        lines.append(json.dumps({"at": at, "messages": self.messages[at:]}, ensure_ascii=False))
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            # private: a conversation holds the person's code and results
            fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
            with open(fd, "a", encoding="utf-8") as f:
                if self._torn:  # the last line was cut by a crash: start on a fresh line
                    f.write("\n")
                    self._torn = False
                f.write("\n".join(lines) + "\n")
                f.flush()
            self._saved = current
        except OSError:
            pass  # a full or read-only disk must not stop the conversation

    @classmethod
    def load(cls, path: Path) -> "Conversation":
        """Replay a log; a torn last line (crash mid-write) is ignored; the result is repaired."""
        conv = cls(path)
        msgs: list[dict] = []
        with open(path, encoding="utf-8") as f:
            text = f.read()
        conv._torn = bool(text) and not text.endswith("\n")
        for line in text.splitlines():
            try:
                rec = json.loads(line)
            except ValueError:
                continue  # a torn line
            if not isinstance(rec, dict):
                continue
            if "lispshell_conversation" in rec:
                conv.meta = {k: v for k, v in rec.items() if k != "lispshell_conversation"}
            elif isinstance(rec.get("at"), int) and isinstance(rec.get("messages"), list):
                msgs = msgs[:rec["at"]] + rec["messages"]
        conv.messages = msgs
        conv._saved = [json.dumps(m, ensure_ascii=False, sort_keys=True) for m in msgs]
        conv._header_written = True
        conv.repair()
        return conv


def _merge(a: list[dict], b: list[dict]) -> list[dict]:
    """Join two same-role contents; tool results stay first."""
    joined = list(a) + list(b)
    return sorted(joined, key=lambda blk: blk.get("type") != "tool_result")


def _result_block(tid: str, text: str, is_error: bool) -> dict:
    block = {"type": "tool_result", "tool_use_id": tid, "content": text if not _blank(text) else "(no output)"}
    if is_error:
        block["is_error"] = True
    return block


def _call_text(block: dict) -> str:
    inp = block.get("input") or {}
    if block.get("name") == "eval" and isinstance(inp.get("code"), str):
        return inp["code"]
    return json.dumps(inp, ensure_ascii=False)


def _result_text(block: dict) -> str:
    c = block.get("content")
    if isinstance(c, list):
        return "".join(x.get("text", "") for x in c if isinstance(x, dict))
    return str(c or "")


# ---------------------------------------------------------------------- files
def conversations_dir() -> Path:
    from lispshell.config import state_dir
    return state_dir() / "conversations"


def new_conversation(meta: dict | None = None) -> Conversation:
    stamp = time.strftime("%Y%m%d-%H%M%S")
    path = conversations_dir() / f"{stamp}-{os.getpid()}-{secrets.token_hex(3)}.jsonl"
    return Conversation(path, meta)


def latest_conversation_path() -> Path | None:
    d = conversations_dir()
    if not d.is_dir():
        return None
    logs = [p for p in d.glob("*.jsonl") if p.stat().st_size > 0]
    return max(logs, key=lambda p: (p.stat().st_mtime, p.name)) if logs else None
