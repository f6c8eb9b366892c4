"""Dot-product tests of every NumPy rule against central differences (float64), plus dtype checks
(float32 in -> float32 adjoint) and complex inputs for the complex-capable rules."""
import zlib

import numpy as np
import pytest

from cases_numpy import CASES
from rulecheck import check_case, check_tangent

PARAMS = []
for c in CASES:
    PARAMS.append(pytest.param(c, "f8", id=c.name() + "-f8"))
    if c.f32:
        PARAMS.append(pytest.param(c, "f4", id=c.name() + "-f4"))
    if c.cplx:
        PARAMS.append(pytest.param(c, "c16", id=c.name() + "-c16"))


@pytest.mark.parametrize("case,dtype", PARAMS)
def test_rule(case, dtype):
    rng = np.random.default_rng(zlib.crc32((case.name() + dtype).encode()))
    check_case(case, rng, dtype)


JVP_PARAMS = []
for c in CASES:
    r = c.rule()
    if r is not None and r.jvp:
        JVP_PARAMS.append(pytest.param(c, "f8", id=c.name() + "-f8"))
        if c.cplx:
            JVP_PARAMS.append(pytest.param(c, "c16", id=c.name() + "-c16"))


@pytest.mark.parametrize("case,dtype", JVP_PARAMS)
def test_tangent(case, dtype):
    rng = np.random.default_rng(zlib.crc32((case.name() + dtype + "jvp").encode()))
    check_tangent(case, rng, dtype)
