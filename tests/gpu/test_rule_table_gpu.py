"""Every case of the NumPy rule table (tests/rules/cases_numpy.py) run on CuPy arrays through the
CuPy callee's rule: the adjoints must be CuPy arrays (no host transfer), with the NumPy adjoints'
shapes, dtypes and values.  Skipped without CuPy and a GPU."""
import os
import sys
import zlib

import numpy as np
import pytest

from gpu_helpers import GPU_OK, assert_same, cp, needs_gpu, to_gpu

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "rules"))
from cases_numpy import CASES  # noqa: E402
from rulecheck import adjoints, random_like, tmap  # noqa: E402

pytestmark = needs_gpu


def _cupy_counterparts():
    """numpy callee -> cupy callee with the same name (numpy and numpy.linalg)."""
    if not GPU_OK:
        return {}
    out = {}
    for npmod, cpmod in ((np, cp), (np.linalg, cp.linalg)):
        for name in dir(npmod):
            f, g = getattr(npmod, name, None), getattr(cpmod, name, None)
            if f is not None and g is not None and callable(g) and g is not f:
                try:
                    out.setdefault(f, g)
                except TypeError:
                    pass
            if isinstance(f, np.ufunc) and g is not None:         # np.add.reduce -> cupy.add.reduce
                for meth in ("reduce", "accumulate", "outer"):
                    if getattr(g, meth, None) is not None:
                        out.setdefault(getattr(f, meth), getattr(g, meth))
    return out


COUNTERPART = _cupy_counterparts()


@pytest.mark.parametrize("case", CASES, ids=[c.name() for c in CASES])
def test_rule_on_cupy(case):
    from s2sad.rules import lookup, lookup_method
    rng = np.random.default_rng(zlib.crc32(case.name().encode()))
    args, kwargs = case.make(rng)
    rule = case.rule()
    post = case.post or (lambda y: y)
    ans = post(case.call(args, kwargs))
    g = random_like(ans, rng)
    ref, _ = adjoints(case, rule, args, kwargs, g, ans)

    cargs, ckw = to_gpu(args), to_gpu(kwargs)
    if case.method:
        cfn, crule = case.fn, lookup_method(case.fn)
    else:
        cfn = COUNTERPART.get(case.fn, case.fn)
        crule = lookup(cfn)
        assert crule is not None, f"no rule for the CuPy counterpart of {case.name()}"
    try:
        cans = post(getattr(cargs[0], cfn)(*cargs[1:], **ckw) if case.method else cfn(*cargs, **ckw))
    except Exception as e:  # noqa: BLE001
        pytest.skip(f"CuPy does not compute this primal: {type(e).__name__}: {e}")
    cg = tmap(lambda v: cp.asarray(v) if isinstance(v, np.ndarray) else v, g)
    got, _ = adjoints(case, crule, cargs, ckw, cg, cans)
    # by position: CuPy may name a parameter differently (cupy.array(obj) vs numpy.array(object))
    assert len(got) == len(ref)
    for (p, gp), rp in zip(got.items(), ref.values()):
        assert_same(gp, rp, f"{case.name()}: adjoint of {p}", rtol=1e-6, atol=1e-9)
