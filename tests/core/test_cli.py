"""`s2sad dump` / `s2sad explain` (and `python -m s2sad`), run as a user would: in a subprocess."""
import os
import subprocess
import sys

import pytest

import s2sad
import cli_target

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
TARGET = os.path.join(HERE, "cli_target.py")


def s2sad_cli(*argv, cwd=HERE):
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    return subprocess.run([sys.executable, "-m", "s2sad", *argv], capture_output=True, text=True,
                          cwd=cwd, env=env, timeout=120)


def test_dump_prints_the_adjoint_source():
    r = s2sad_cli("dump", "cli_target.py:plain")
    assert r.returncode == 0, r.stderr
    assert r.stdout == s2sad.differentiate(cli_target.plain).adjoint_source()
    assert "def plain__fwd(x, y):" in r.stdout and "def plain__bwd(" in r.stdout
    assert "# cli_target.py:" in r.stdout


def test_dump_with_an_absolute_path_from_another_directory(tmp_path):
    r = s2sad_cli("dump", f"{TARGET}:plain", cwd=str(tmp_path))
    assert r.returncode == 0, r.stderr
    assert r.stdout == s2sad.differentiate(cli_target.plain).adjoint_source()


def test_dump_wrt_list():
    r = s2sad_cli("dump", "cli_target.py:plain", "--wrt", "0,y")
    assert r.returncode == 0, r.stderr
    assert r.stdout == s2sad.differentiate(cli_target.plain, wrt=(0, "y")).adjoint_source()
    assert "with respect to x, y" in r.stdout


def test_dump_uses_the_decorators_wrt():
    r = s2sad_cli("dump", "cli_target.py:decorated")
    assert r.returncode == 0, r.stderr
    assert "with respect to y" in r.stdout
    assert r.stdout == cli_target.decorated.adjoint_source()


def test_dump_dotted_method():
    r = s2sad_cli("dump", "cli_target.py:Model.energy", "--wrt", "x")
    assert r.returncode == 0, r.stderr
    assert "def energy__fwd(self, x, w):" in r.stdout


def test_dump_a_method_defaults_to_its_first_parameter_after_self():
    r = s2sad_cli("dump", "cli_target.py:Model.energy")
    assert r.returncode == 0, r.stderr
    assert "with respect to x" in r.stdout and "return (_b_x,)" in r.stdout
    r = s2sad_cli("explain", "cli_target.py:Model.energy")
    assert r.returncode == 0, r.stderr
    assert "(with respect to x)" in r.stdout
    r = s2sad_cli("dump", "cli_target.py:Model.energy", "--wrt", "0")
    assert r.returncode == 0, r.stderr
    assert "with respect to self" in r.stdout


def test_explain_prints_the_report():
    r = s2sad_cli("explain", "cli_target.py:plain")
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == s2sad.differentiate(cli_target.plain).explain().strip()
    assert r.stdout.startswith("call sites of plain (with respect to x):")


@pytest.mark.parametrize("argv, words", [
    (("dump", "cli_target.py:nope"), "has no attribute 'nope'"),
    (("dump", "missing_file.py:f"), "no such file"),
    (("dump", "cli_target.py"), "FILE.py:FUNC"),
    (("dump", "cli_target.py:plain", "--wrt", "z"), "'z' is not a parameter"),
    (("dump", "cli_target.py:broken"), "cli_target.py:"),
    (("explain", "cli_target.py:Model.nope"), "no attribute 'nope'"),
])
def test_errors_are_one_line_exit_2_no_traceback(argv, words):
    r = s2sad_cli(*argv)
    assert r.returncode == 2
    assert r.stderr.startswith("s2sad: error: "), r.stderr
    assert words in r.stderr
    assert "Traceback" not in r.stderr
    assert r.stdout == ""


def test_bad_usage_exits_2():
    r = s2sad_cli("frobnicate")
    assert r.returncode == 2
    assert "usage:" in r.stderr


def test_mode_forward():
    r = s2sad_cli("dump", "cli_target.py:plain", "--mode", "forward")
    try:
        from s2sad.transforms import forward_source
    except ImportError:
        assert r.returncode == 2
        assert r.stderr.startswith("s2sad: error: forward mode not available")
        return
    assert r.returncode == 0, r.stderr
    assert r.stdout == forward_source(cli_target.plain, 0)


def test_main_is_callable_in_process(capsys):
    from s2sad.cli import main
    assert main(["dump", TARGET + ":plain"]) == 0
    assert "def plain__fwd" in capsys.readouterr().out
    assert main(["dump", TARGET + ":nope"]) == 2
    assert capsys.readouterr().err.startswith("s2sad: error: ")


def test_console_script_when_installed():
    exe = os.path.join(os.path.dirname(sys.executable), "s2sad")
    if not os.path.exists(exe):
        pytest.skip("the s2sad console script is not installed in this environment")
    r = subprocess.run([exe, "dump", "cli_target.py:plain"], capture_output=True, text=True,
                       cwd=HERE, timeout=120)
    assert r.returncode == 0, r.stderr
    assert "def plain__fwd(x, y):" in r.stdout
