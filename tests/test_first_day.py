"""A Lisp programmer's first day (issue 23): what reads as Lisp is evaluated, their init files
are loaded, and the REPL's smaller defects, each in a real pty or against a real server."""
from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from conftest import LISPSHELL
from pty_shell import META_ENTER, Shell

PROMPT = "CL-USER>"


@pytest.fixture
def shell(tmp_path):
    shells = []

    def start(*args, env=None):
        sh = Shell(tmp_path, *args, env=env)
        shells.append(sh)
        return sh

    yield start
    for sh in shells:
        sh.close()


def test_lisp_is_never_sent_to_the_model(shell):
    sh = shell("--lisp", "sbcl", "--no-project")        # no API key: prose would be said so
    sh.expect(PROMPT)
    sh.submit("(defparameter *x* 3) *x*")
    sh.expect("\n3\n")
    sh.submit("*x* *x*")
    sh.expect("\n3\n")
    sh.send("hello world" + META_ENTER)                  # Esc Enter: Lisp, whatever it reads as
    sh.expect("The variable HELLO is unbound")
    sh.submit("add seven to that")                       # unmistakable prose
    sh.expect("The LLM is not enabled")
    assert "The LLM is not enabled" not in sh.text().split("add seven to that")[0]
