"""s2sad settles glibc's allocation thresholds once per process (s2sad/runtime/heap.py), so that a
derivative's arrays of 128 KiB and more come from the heap on every call instead of from fresh
pages (a page fault each).  Each test runs in a fresh process: the thresholds are process-wide and
only rise."""
import json
import os
import subprocess
import sys
import textwrap

import pytest

from s2sad.runtime import heap

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

pytestmark = pytest.mark.skipif(not heap._glibc() or not sys.platform.startswith("linux"),
                                reason="glibc's malloc thresholds (Linux)")

# six arrays of 256 KiB made and freed together, 50 times: the page faults per round
PATTERN = """
import resource
import numpy as np
def faults():
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt
def rounds(n=50):
    held = [np.ones(32768) for _ in range(6)]     # (the first round takes its pages in any case)
    del held
    f0 = faults()
    for _ in range(n):
        held = [np.ones(32768) for _ in range(6)]
        del held
    return (faults() - f0) / n
"""


def child(code, **env):
    e = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    e.pop("MALLOC_MMAP_THRESHOLD_", None)
    e.pop("MALLOC_TRIM_THRESHOLD_", None)
    e.update(env)
    out = subprocess.run([sys.executable, "-c", PATTERN + textwrap.dedent(code)], env=e,
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_without_settling_arrays_of_a_few_hundred_kib_fault_on_every_round():
    # the state a fresh process is in, which settle() changes (so the tests below mean something)
    r = child("print(json.dumps(rounds()))\n".replace("json", "__import__('json')"))
    assert r > 24                       # (of 6 x 65 pages: 384 on one machine, 96 on another)


def test_settle_keeps_them_in_the_heap():
    r = child("""
        from s2sad.runtime import heap
        heap.settle()
        print(__import__('json').dumps(rounds()))
    """)
    assert r < 1


def test_s2sad_malloc_0_turns_it_off():
    r = child("""
        from s2sad.runtime import heap
        assert not heap.enabled()
        heap.settle()
        print(__import__('json').dumps(rounds()))
    """, S2SAD_MALLOC="0")
    assert r > 24                       # (of 6 x 65 pages: 384 on one machine, 96 on another)


def test_a_gradient_whose_arrays_are_256_kib_takes_no_fresh_pages_per_call(tmp_path):
    # the derivative loaded from the disk cache (a second process) as well as built: loading
    # frees less than building, which is what left the thresholds low in most processes
    (tmp_path / "model.py").write_text(textwrap.dedent("""
        import numpy as np

        def f(a, b):
            h = np.tanh(a * b)
            return np.sum((h - a) ** 2 * b)
    """))
    code = """
        import sys
        sys.path.insert(0, %r)
        import numpy as np, s2sad
        from model import f
        a = np.linspace(-1.0, 1.0, 32768)
        b = np.linspace(0.5, 2.0, 32768)
        g = s2sad.value_and_grad(f, wrt=(0, 1))
        g(a, b)
        f0 = faults()
        for _ in range(50):
            g(a, b)
        print(__import__('json').dumps((faults() - f0) / 50))
    """ % str(tmp_path)
    env = {"S2SAD_CACHE": "1", "S2SAD_CACHE_DIR": str(tmp_path / "cache")}
    built = child(code, **env)
    loaded = child(code, **env)
    assert built < 1 and loaded < 1
