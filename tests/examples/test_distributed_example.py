"""examples/distributed_gradient.py: a Dask LocalCluster with two worker processes computes the
gradient shard by shard; the sum matches the single-process gradient (issue 16, point 6)."""
import os
import re
import subprocess
import sys

import pytest

pytest.importorskip("dask")
pytest.importorskip("distributed")

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def test_distributed_gradient_matches_single_process(tmp_path):
    env = dict(os.environ, S2SAD_EXAMPLES_QUICK="1")
    env["PYTHONPATH"] = ROOT + os.pathsep + env.get("PYTHONPATH", "")
    # run from elsewhere: the workers cannot import the example's functions by name
    p = subprocess.run([sys.executable, os.path.join(ROOT, "examples", "distributed_gradient.py"),
                        "--shards", "3"], capture_output=True, text=True, env=env,
                       cwd=str(tmp_path), timeout=500)
    assert p.returncode == 0, p.stdout + p.stderr
    out = p.stdout
    m = re.search(r"^3 shards on 2 worker processes \[(\d+), (\d+)\]", out, re.M)
    assert m, out
    assert str(os.getpid()) not in m.groups() and m.group(1) != m.group(2)
    v = re.search(r"^loss\s+distributed (\S+)\s+single process (\S+)", out, re.M)
    assert abs(float(v.group(1)) - float(v.group(2))) <= 1e-9 * abs(float(v.group(2)))
    b = re.search(r"^d loss/db\s+distributed (\S+)\s+single process (\S+)", out, re.M)
    assert abs(float(b.group(1)) - float(b.group(2))) <= 1e-8
    d = float(re.search(r"largest difference between the two gradients: (\S+)", out).group(1))
    assert d < 1e-9
    assert "OK: the shard gradients sum to the full gradient" in out
