"""`lispshell check`, run as a person or a pre-commit hook runs it: the real console script."""
from __future__ import annotations

import os
import stat
import subprocess

import pytest

from conftest import LISPSHELL


def run(*args, stdin=None, cwd=None):
    p = subprocess.run([LISPSHELL, "check", *args], input=stdin, capture_output=True,
                       text=True, cwd=cwd, timeout=60)
    return p.returncode, p.stdout, p.stderr


@pytest.fixture
def files(tmp_path):
    (tmp_path / "ok.lisp").write_text("(defun f (x)\n  (+ x 1))\n")
    (tmp_path / "open.lisp").write_text("(defun f (x)\n  (+ x 1)\n")
    (tmp_path / "kind.clj").write_text("(defn f [x]\n  (let [y 1)\n    (+ x y)))\n")
    (tmp_path / "extra.scm").write_text("(define (f x)\n  (g x)))\n")
    (tmp_path / "str.lisp").write_text('(foo "bar\n')
    return tmp_path


def test_valid_files_exit_0_silently(files):
    assert run(str(files / "ok.lisp")) == (0, "", "")


def test_problems_are_path_line_col_and_exit_1(files):
    code, out, err = run(str(files / "open.lisp"), str(files / "kind.clj"),
                         str(files / "str.lisp"), str(files / "ok.lisp"))
    assert code == 1 and err == ""
    lines = out.splitlines()
    assert lines[0].startswith(f"{files / 'open.lisp'}:1:1: unclosed '('")
    assert "line 2, column 10" in lines[0]
    assert lines[1].startswith(f"{files / 'kind.clj'}:2:12: ')'")
    assert lines[2].startswith(f"{files / 'str.lisp'}:1:6: Unexpected end of input - "
                               f"unterminated string")


def test_fix_writes_only_certain_repairs_atomically_keeping_the_mode(files):
    kind = files / "kind.clj"
    os.chmod(kind, 0o640)
    before_open = (files / "open.lisp").read_text()
    before_extra = (files / "extra.scm").read_text()
    code, out, _ = run("--fix", str(kind), str(files / "extra.scm"), str(files / "open.lisp"))
    assert kind.read_text() == "(defn f [x]\n  (let [y 1]\n    (+ x y)))\n"   # certain
    assert stat.S_IMODE(kind.stat().st_mode) == 0o640
    assert (files / "extra.scm").read_text() == before_extra        # likely: left alone
    assert (files / "open.lisp").read_text() == before_open         # likely: left alone
    assert f"{kind}: fixed (1 edit, certain)" in out
    assert (f"{files / 'open.lisp'}: not fixed: the repair is likely (the indentation "
            f"decides): --fix=likely writes it") in out
    assert code == 1                                                # still broken
    assert not [p for p in os.listdir(files) if p.startswith(".lispshell-check-")]


def test_fix_likely_also_writes_likely_repairs_but_never_a_guess(files):
    guess = files / "guess.lisp"        # a closer dropped mid-line: `if` with one argument
    guess.write_text("(defun f (x)\n  (if (> x 0 x (- x)))\n")
    code, out, _ = run("--fix=likely", str(files / "extra.scm"), str(files / "open.lisp"),
                       str(guess))
    assert (files / "extra.scm").read_text() == "(define (f x)\n  (g x))\n"
    assert (files / "open.lisp").read_text() == "(defun f (x)\n  (+ x 1))\n"
    assert f"{files / 'open.lisp'}: fixed (1 edit, likely)" in out
    assert guess.read_text() == "(defun f (x)\n  (if (> x 0 x (- x)))\n"
    assert f"{guess}: not fixed: the repair is a guess (form shape: (if ...)" in out
    assert code == 1                                                # guess.lisp still broken
    assert run("--fix=likely", str(files / "extra.scm"), str(files / "open.lisp"))[0] == 0
    code, _, err = run("--fix=maybe", str(guess))
    assert code == 2 and "--fix=likely" in err


def test_diff_shows_the_repair_and_its_level_without_writing(files):
    code, out, _ = run("--diff", str(files / "open.lisp"), str(files / "kind.clj"))
    assert code == 1
    assert (f"+++ {files / 'open.lisp'} (repaired: likely, the indentation decides; written "
            f"by --fix=likely)") in out
    assert "-  (+ x 1)\n+  (+ x 1))\n# 2:10 inserted ')'" in out
    assert f"+++ {files / 'kind.clj'} (repaired: certain, " in out
    assert (files / "open.lisp").read_text() == "(defun f (x)\n  (+ x 1)\n"


def test_stdin_needs_a_dialect_and_fix_writes_text_to_stdout():
    assert run("-", stdin="(a)")[0] == 2
    code, out, err = run("--dialect", "cl", "-", stdin="(a b))")
    assert code == 1 and out.startswith("<stdin>:1:6: unmatched close parenthesis")
    code, out, err = run("--fix", "--dialect", "clojure", "-", stdin="(let [x 1)\n  x)")
    assert out == "(let [x 1]\n  x)" and "fixed" in err and code == 0


def test_directories_are_searched_by_extension(files):
    (files / "notes.txt").write_text("((((")
    code, out, _ = run(str(files))
    assert code == 1
    assert "notes.txt" not in out and "open.lisp:1:1" in out and "ok.lisp" not in out


@pytest.mark.parametrize("args", [[], ["--bogus", "x.lisp"], ["--dialect", "cobol", "a.lisp"],
                                  ["nowhere.lisp"], ["file.py"]])
def test_usage_and_io_errors_exit_2(args, tmp_path):
    (tmp_path / "file.py").write_text("x")
    code, out, err = run(*args, cwd=tmp_path)
    assert code == 2 and err and "Traceback" not in err


@pytest.mark.parametrize("name", ["nowhere", "nowhere.lisp"])
def test_a_missing_file_is_said_missing_whatever_its_name(name, tmp_path):
    code, out, err = run(name, cwd=tmp_path)
    assert (code, out) == (2, "") and err == f"{name}: error: no such file or directory\n"


def test_a_named_pipe_in_a_folder_is_skipped(tmp_path):
    """Opening it would wait for a writer forever; only regular files are checked."""
    (tmp_path / "ok.lisp").write_text("(defun f (x) x)\n")
    os.mkfifo(tmp_path / "pipe.lisp")
    r = subprocess.run([LISPSHELL, "check", str(tmp_path)], capture_output=True, text=True,
                       timeout=60)
    assert (r.returncode, r.stdout, r.stderr) == (0, "", "")


def test_endless_or_huge_input_is_refused_not_read_forever(tmp_path):
    # standard input that never ends: the check stops at its limit and says so
    with open("/dev/zero", "rb") as zero:
        p = subprocess.run([LISPSHELL, "check", "--dialect", "cl", "-"], stdin=zero,
                           capture_output=True, text=True, timeout=120)
    assert p.returncode == 2 and "standard input is larger than 64 MiB" in p.stderr
    # a file past the limit (sparse: no disk) is reported and left as it is, with --fix too
    big = tmp_path / "big.lisp"
    with open(big, "wb") as f:
        f.truncate(64 * 2**20 + 1)
    p = subprocess.run([LISPSHELL, "check", "--fix", str(big)], capture_output=True,
                       text=True, timeout=120)
    assert p.returncode == 2 and f"{big}: error: larger than 64 MiB" in p.stderr
    assert big.stat().st_size == 64 * 2**20 + 1


# A 30-line defun whose `dolist` lost its closer at the end of line 14 (issue 23 item 7).
DOLIST_DROPPED = """\
(defun summarize-orders (orders &key (currency :eur) (threshold 100))
  "Summarize ORDERS: count, total and the large ones, in CURRENCY."
  (let ((count 0)
        (total 0)
        (large '())
        (by-customer (make-hash-table :test 'equal)))
    (dolist (order orders)
      (let ((amount (convert (order-amount order) currency))
            (customer (order-customer order)))
        (incf count)
        (incf total amount)
        (push order (gethash customer by-customer))
        (when (> amount threshold)
          (push order large)))
    (let ((customers '()))
      (maphash (lambda (name list)
                 (push (cons name (length list)) customers))
               by-customer)
      (setf customers (sort customers #'> :key #'cdr))
      (list :count count
            :total total
            :currency currency
            :average (if (zerop count) 0 (/ total count))
            :large (nreverse large)
            :top-customers (subseq customers 0 (min 3 (length customers)))
            :threshold threshold))))

(defun convert (amount currency)
  (declare (ignore currency))
  amount)
"""


def test_the_message_names_the_place_the_repair_chose(tmp_path):
    # The reader's own hint (after the last code before `(defun convert`, line 26) is not
    # where the closer was dropped; the repair's place (14:31, after the dolist's body) is,
    # and the one-line message must say the same as --diff, for the dolist's opener.
    path = tmp_path / "orders.lisp"
    path.write_text(DOLIST_DROPPED)
    code, out, _ = run("--diff", str(path))
    assert code == 1
    assert "# 14:31 inserted ')'" in out
    assert out.splitlines()[-1] == (f"{path}:7:5: unclosed '(' opened here; the missing ')' "
                                    f"most likely belongs at line 14, column 31")


def test_a_closer_one_too_many_mid_form_is_blamed_where_the_indentation_says(tmp_path):
    # Issue 23 item 8: the `let` of a 32-line defun closes at line 25 while lines 26-31 stay
    # indented as its body; the reader only trips on the defun's last `)` (32:22), which is
    # not the one typed too many.
    from pathlib import Path
    cases = (Path(__file__).parent / "cases" / "repair.md").read_text()
    damaged = cases.split("## A closer one too many mid-form")[1].split("```in cl\n")[1]
    damaged = damaged.split("```")[0]
    path = tmp_path / "restock.lisp"
    path.write_text(damaged)
    code, out, _ = run(str(path))
    assert code == 1
    assert out == (f"{path}:25:49: ')' is one too many (remove it): it ends the form opened "
                   f"at line 3, column 3 before the lines indented as its body\n")


def test_an_unterminated_docstring_is_reported_where_it_opens(tmp_path):
    # Issue 23 item 9: the reader stops at a string left open on line 14 (14:37), swallowed
    # code in between; the docstring of line 5 is the string the indentation points at.
    from pathlib import Path
    cases = (Path(__file__).parent / "cases" / "repair.md").read_text()
    damaged = cases.split("## A docstring's closing quote missing")[1]
    damaged = damaged.split("```in clojure\n")[1].split("```")[0]
    path = tmp_path / "orders.clj"
    path.write_text(damaged)
    code, out, _ = run(str(path))
    assert code == 1
    assert out == (f"{path}:5:3: unterminated string (it starts here): its closing '\"' is "
                   f"most likely missing at line 5, column 43 (the lines after it are code, "
                   f"indented as such)\n")
    # likely: --fix=likely writes it, --fix (certain only) does not
    assert run("--fix", str(path))[0] == 1 and path.read_text() == damaged
    assert run("--fix=likely", str(path))[0] == 0
    assert path.read_text() == damaged.replace("for the log.\n", "for the log.\"\n")


def test_a_closed_pipe_ends_the_check_quietly(tmp_path):
    """`lispshell check --diff DIR | head`: the reader goes away; no traceback."""
    for i in range(50):
        (tmp_path / f"f{i}.scm").write_text(f"(define (f{i} x)\n  (g (h x\n")
    proc = subprocess.Popen([LISPSHELL, "check", "--diff", str(tmp_path)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            stdin=subprocess.DEVNULL)
    proc.stdout.close()                          # the reader is gone before the first line
    assert proc.wait(timeout=120) == 141
    err = proc.stderr.read().decode()
    assert "Traceback" not in err and "BrokenPipe" not in err
    assert all((tmp_path / f"f{i}.scm").read_text().endswith("(h x\n") for i in range(50))
