"""Smoke test of the SBCL session (the fuller, parametrised tests are in test_session_core.py)."""
from lispshell.lisp.session import LispSession


def test_sbcl_values_errors_and_close():
    s = LispSession("sbcl")
    s.start()
    try:
        r = s.eval("(floor 7 2)")
        assert r.ok and r.values == ["3", "1"] and r.package == "CL-USER"
        r = s.eval("(/ 1 0)")
        assert not r.ok and r.error.type == "DIVISION-BY-ZERO"
        assert s.eval("(+ 1 2)").values == ["3"]
    finally:
        pid = s.pid
        s.close()
    import os
    try:
        os.kill(pid, 0)
        raise AssertionError("child still exists after close()")
    except ProcessLookupError:
        pass
