"""Point 3 of issue 2: calls with no active argument run as they are (a print, a lock, a timer
never block differentiation), and their side effects happen once per call."""
import threading
import time
import zlib

import numpy as np
import pytest

import s2sad
from core_util import check_grads, randn

LOCK = threading.Lock()
RLOCK = threading.RLock()
LOG = []


def with_print(x):
    print("computing")
    y = np.sin(x)
    print("y has shape", y.shape)
    return np.sum(y * y)


def test_print_runs_once_per_call(capsys):
    x = randn(3)
    v, g = s2sad.value_and_grad(with_print)(x)
    out = capsys.readouterr().out
    assert out == "computing\ny has shape (3,)\n"
    np.testing.assert_allclose(g, 2 * np.sin(x) * np.cos(x), rtol=1e-12)
    s2sad.grad(with_print)(x)
    assert capsys.readouterr().out.count("computing") == 1


def print_active(x):
    print("x =", x)
    return x * x


def test_print_of_an_active_value(capsys):
    assert s2sad.grad(print_active)(1.5) == pytest.approx(3.0)
    assert capsys.readouterr().out == "x = 1.5\n"


def with_lock_calls(x):
    LOCK.acquire()
    y = np.exp(x)
    LOCK.release()
    return np.sum(y)


def test_lock_acquire_release():
    x = randn(3)
    check_grads(with_lock_calls, (x,))
    assert not LOCK.locked()


def with_lock_statement(x):
    with LOCK:
        y = np.exp(x)
    return np.sum(y)


def test_with_lock_statement():
    x = randn(3)
    check_grads(with_lock_statement, (x,))
    assert not LOCK.locked()


def with_timer(x):
    t0 = time.perf_counter()
    y = np.tanh(x)
    elapsed = time.perf_counter() - t0
    LOG.append(elapsed)
    return np.sum(y)


def test_timer_and_log_append_once_per_call():
    x = randn(3)
    before = len(LOG)
    v, g = s2sad.value_and_grad(with_timer)(x)
    assert len(LOG) == before + 1
    assert isinstance(LOG[-1], float) and LOG[-1] >= 0.0
    np.testing.assert_allclose(g, 1 - np.tanh(x) ** 2, rtol=1e-12)
    s2sad.grad(with_timer)(x)
    assert len(LOG) == before + 2


def opaque_inactive(x):
    c = zlib.crc32(b"s2sad") % 7          # opaque builtin, no active argument
    r = repr(x)                           # opaque builtin on an active value, result not a float
    return x * c + len(r) * 0.0


def test_opaque_callees_without_differentiable_results_are_fine():
    c = zlib.crc32(b"s2sad") % 7
    assert s2sad.grad(opaque_inactive)(0.7) == pytest.approx(c)


def explain_inactive(x):
    t0 = time.perf_counter()
    print("step")
    return x * 2.0


def test_explain_reports_inactive_sites():
    report = s2sad.differentiate(explain_inactive).explain(1.0)
    rows = {line.split()[1]: line.split()[2] for line in report.splitlines()[2:]}
    assert rows["print"] in ("inactive", "zero")
    assert rows["*"] == "primitive"


def test_explain_reports_argumentless_opaque_call_inactive():
    report = s2sad.differentiate(explain_inactive).explain(1.0)
    rows = {line.split()[1]: line.split()[2] for line in report.splitlines()[2:]}
    assert rows["time.perf_counter"] == "inactive"


def inactive_rng_and_counter(x, seed):
    rng = np.random.default_rng(seed)
    noise = rng.standard_normal(x.shape)
    return np.sum(x * noise)


def test_inactive_random_numbers():
    x = randn(4)
    g = s2sad.grad(inactive_rng_and_counter)(x, 5)
    np.testing.assert_allclose(g, np.random.default_rng(5).standard_normal(4), rtol=1e-15)
