"""Traps where a derivative can go silently wrong: late binding, aliasing, in-place mutation."""
import numpy as np

import s2sad
from lang_helpers import check_grads, rng, assert_close, line_of


# == case: late_binding_lambdas_in_loop
def late_binding(x, ks):
    fs = [lambda v: v * k for k in ks]          # Python late binding: every lambda uses the last k
    return sum(f(x) for f in fs)


def early_binding(x, ks):
    fs = [lambda v, k=k: v * k for k in ks]     # default argument captures each k
    return sum(f(x) for f in fs)


def test_late_binding_lambdas_in_loop():
    ks = [0.5, 1.5, 2.5]
    assert_close(s2sad.grad(early_binding)(1.3, ks), 4.5)
    check_grads(early_binding, (1.3, ks), wrt=(0, 1))
    # late binding: either the right numbers (only the last k counts) or a clear refusal
    try:
        gx, gk = s2sad.grad(late_binding, wrt=(0, 1))(1.3, ks)
    except s2sad.S2SADError as e:
        assert "late binding" in str(e), str(e)
        assert f"{__file__}:{line_of(late_binding, 'fs = [')}" in str(e), str(e)
    else:
        assert_close(gx, 3 * 2.5)
        assert_close(gk, [0.0, 0.0, 3 * 1.3])
