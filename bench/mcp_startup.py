"""How soon `lispshell mcp` answers a client that starts it, and how soon it stops when told.
Claude Code waits 2 s for its MCP servers, then starts without their tools; it stops a server
with SIGINT, SIGTERM 100 ms later and SIGKILL 400 ms after that. Targets on this 2-core
machine: the `initialize` answer within 300 ms of the start, and exit within 100 ms of SIGINT
or SIGTERM, with an eval running (and over `--http`, with a client's event stream open). `python -c pass`, started in the same run, is the floor.

    .venv/bin/python bench/mcp_startup.py [--runs N]

Each run starts the real command over stdio as Claude Code does (`--lisp sbcl`, the
`initialize` Claude Code 2.1.197 sends), and fails (exit 1) when an answer is not the real one:
`initialize` must name the server and a protocol version, `tools/list` must list every tool of
the registry, no Lisp may have been started for them, a `tools/call` after them must be answered
by the SDK, and after the signal the child Lisp must be gone.
"""
from __future__ import annotations

import argparse
import json
import os
import select
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BIN = Path(sys.executable).parent

INITIALIZE = {"method": "initialize", "params": {
    "protocolVersion": "2025-11-25", "capabilities": {"roots": {}, "elicitation": {}},
    "clientInfo": {"name": "claude-code", "version": "2.1.197"}}, "jsonrpc": "2.0", "id": 0}


class Fail(Exception):
    pass


def send(proc, message: dict) -> None:
    proc.stdin.write((json.dumps(message) + "\n").encode())
    proc.stdin.flush()


def answer(proc, id_, deadline: float = 60.0) -> dict:
    """The next line answering `id_` (a notification or request from the server is skipped)."""
    end = time.monotonic() + deadline
    while time.monotonic() < end:
        ready, _, _ = select.select([proc.stdout], [], [], end - time.monotonic())
        if not ready:
            break
        line = proc.stdout.readline()
        if not line:
            raise Fail(f"the server closed stdout before answering {id_}: "
                       f"{proc.stderr.read().decode(errors='replace')[-2000:]}")
        message = json.loads(line)
        if message.get("id") == id_ and "method" not in message:
            return message
    raise Fail(f"no answer to {id_} in {deadline} s")


def lisps(pid: int) -> list[int]:
    """The SBCL children of `pid` (the server starts its Lisp directly)."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            stat = (entry / "stat").read_text()
            command = (entry / "cmdline").read_bytes().split(b"\0")[0]
        except OSError:
            continue
        if int(stat.rpartition(")")[2].split()[1]) == pid and command.endswith(b"sbcl"):
            found.append(int(entry.name))
    return found


def alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0] not in "ZX"
    except OSError:
        return False


def gone(pid: int) -> bool:
    """True once `pid` has exited (given a second: the signal is on its way)."""
    for _ in range(100):
        if not alive(pid):
            return True
        time.sleep(0.01)
    return False


def floor(runs: int) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run([sys.executable, "-c", "pass"], check=True)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def start(root: str, *flags: str) -> tuple[subprocess.Popen, float]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANTHROPIC_")}
    env["LISPSHELL_STATE_DIR"] = str(Path(root) / ".state")   # not your journal
    began = time.perf_counter()
    proc = subprocess.Popen([str(BIN / "lispshell"), "mcp", "--lisp", "sbcl", "--no-project",
                             "--root", root, *flags], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=root, env=env,
                            bufsize=0)   # unbuffered: select() sees every line
    return proc, began


def handshake(root: str, expected_tools: int) -> tuple[float, float]:
    """Seconds from the start to the `initialize` answer, and to the `tools/list` answer."""
    proc, began = start(root)
    try:
        send(proc, INITIALIZE)
        init = answer(proc, 0)
        t_init = time.perf_counter() - began
        send(proc, {"method": "notifications/initialized", "jsonrpc": "2.0"})
        send(proc, {"method": "tools/list", "jsonrpc": "2.0", "id": 1})
        listed = answer(proc, 1)
        t_list = time.perf_counter() - began
        result = init.get("result") or {}
        if result.get("serverInfo", {}).get("name") != "lispshell" or not result.get(
                "protocolVersion"):
            raise Fail(f"not an initialize answer: {init}")
        names = [t["name"] for t in (listed.get("result") or {}).get("tools", [])]
        if len(names) != expected_tools:
            raise Fail(f"tools/list gave {len(names)} tools, the registry has {expected_tools}")
        if lisps(proc.pid):
            raise Fail("a Lisp was started to answer initialize or tools/list")
        # The SDK takes over for the rest: a call must be answered, by it.
        send(proc, {"method": "tools/call", "jsonrpc": "2.0", "id": 2, "params": {
            "name": "check_syntax", "arguments": {"code": "(a b", "dialect": "cl"}}})
        called = answer(proc, 2)
        if "structuredContent" not in (called.get("result") or {}):
            raise Fail(f"tools/call was not answered by the SDK: {called}")
        return t_init, t_list
    finally:
        proc.kill()
        proc.wait()


def shutdown(root: str, sig: int) -> float:
    """Seconds from `sig` to the server's exit, with an eval running in a child SBCL."""
    proc, _ = start(root, "--allow-eval")
    try:
        send(proc, INITIALIZE)
        answer(proc, 0)
        send(proc, {"method": "notifications/initialized", "jsonrpc": "2.0"})
        send(proc, {"method": "tools/call", "jsonrpc": "2.0", "id": 1, "params": {
            "name": "eval", "arguments": {"code": "(+ 1 2)"}}})
        answer(proc, 1)
        started = Path(root) / f"started-{proc.pid}"
        send(proc, {"method": "tools/call", "jsonrpc": "2.0", "id": 2, "params": {
            "name": "eval", "arguments": {"code": f'(progn (with-open-file (s "{started}" '
                                                  ':direction :output) (print 1 s)) (sleep 60))'}}})
        while not started.exists():   # the signal must interrupt real work in the image
            if proc.poll() is not None:
                raise Fail("the server died during the eval")
            time.sleep(0.005)
        children = lisps(proc.pid)
        if not children:
            raise Fail("no child Lisp to end")
        began = time.perf_counter()
        proc.send_signal(sig)
        code = proc.wait(timeout=5)
        took = time.perf_counter() - began
        if code != 0:
            raise Fail(f"exit code {code} after {signal.Signals(sig).name}")
        if not all(gone(pid) for pid in children):
            raise Fail(f"a child Lisp of {children} outlived the server")
        return took
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def http_shutdown(root: str, sig: int) -> float:
    """Seconds from `sig` to the exit of `lispshell mcp --http`, a client's event stream open
    and a child SBCL started."""
    import re
    import threading

    import httpx2

    env = {k: v for k, v in os.environ.items() if not k.startswith("ANTHROPIC_")}
    env["LISPSHELL_STATE_DIR"] = str(Path(root) / ".state")
    proc = subprocess.Popen([str(BIN / "lispshell"), "mcp", "--http", "127.0.0.1:0", "--lisp",
                             "sbcl", "--allow-eval", "--no-project", "--root", root],
                            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True, env=env)
    try:
        said = ""
        while not (m := re.search(r"serving (\S+)\n.*token (\S+)\n", said, re.S)):
            line = proc.stderr.readline()
            if not line:
                raise Fail(f"--http did not start: {said}")
            said += line
        url, token = m.groups()
        headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json",
                   "Accept": "application/json, text/event-stream"}
        with httpx2.Client(timeout=60) as http:
            opened = http.post(url, headers=headers, json=INITIALIZE)
            headers["mcp-session-id"] = opened.headers["mcp-session-id"]
            headers["mcp-protocol-version"] = INITIALIZE["params"]["protocolVersion"]
            http.post(url, headers=headers, json={"method": "notifications/initialized",
                                                  "jsonrpc": "2.0"})
            called = http.post(url, headers=headers, json={
                "method": "tools/call", "jsonrpc": "2.0", "id": 1,
                "params": {"name": "eval", "arguments": {"code": "(+ 1 2)"}}})
            children = lisps(proc.pid)
            if '\\"values\\":[\\"3\\"]' not in called.text.replace(" ", "") or not children:
                raise Fail(f"the eval over HTTP did not run in a child Lisp: {called.text}")
            listening = threading.Event()

            def listen():
                try:
                    with http.stream("GET", url, headers=headers) as stream:
                        listening.set()
                        for _ in stream.iter_bytes():
                            pass
                except httpx2.HTTPError:
                    pass

            threading.Thread(target=listen, daemon=True).start()
            if not listening.wait(60):
                raise Fail("the event stream did not open")
            began = time.perf_counter()
            proc.send_signal(sig)
            code = proc.wait(timeout=30)
            took = time.perf_counter() - began
        if code != 0 or not all(gone(pid) for pid in children):
            raise Fail(f"--http: exit code {code}, or its Lisp outlived it")
        return took
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        proc.stderr.close()


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=11)
    runs = parser.parse_args().runs
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from lispshell.tools.registry import all_tools
    expected = len(all_tools())
    try:
        with tempfile.TemporaryDirectory() as root:
            base = floor(runs)
            shakes = [handshake(root, expected) for _ in range(runs)]
            stops = {sig: [shutdown(root, sig) for _ in range(max(3, runs // 3))]
                     for sig in (signal.SIGINT, signal.SIGTERM)}
            http_stops = [http_shutdown(root, signal.SIGINT) for _ in range(3)]
    except Fail as exc:
        print(f"FAIL: {exc}", file=sys.stderr)
        return 1
    t_init = statistics.median(s[0] for s in shakes)
    t_list = statistics.median(s[1] for s in shakes)
    print(f"python -c pass                {base * 1000:6.1f} ms   (median of {runs})")
    print(f"initialize answered           {t_init * 1000:6.1f} ms   {t_init / base:5.2f}x python   "
          f"target 300 ms: {'met' if t_init < 0.300 else 'MISSED'}")
    print(f"tools/list answered           {t_list * 1000:6.1f} ms   {t_list / base:5.2f}x python")
    for sig, times in stops.items():
        worst = max(times)
        print(f"exit after {signal.Signals(sig).name:7}            {statistics.median(times) * 1000:6.1f} ms"
              f"   (worst {worst * 1000:.1f} ms of {len(times)}, eval running)   "
              f"target 100 ms: {'met' if worst < 0.100 else 'MISSED'}")
    print(f"exit after SIGINT, --http       {statistics.median(http_stops) * 1000:6.1f} ms"
          f"   (worst {max(http_stops) * 1000:.1f} ms of 3, a client stream open)   "
          f"target 100 ms: {'met' if max(http_stops) < 0.100 else 'MISSED'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
