"""Helpers of the forward-mode tests (not collected by pytest).

``check_consistency`` is the forward/reverse dot-product test: for random tangents ``v`` of the
active arguments and a random cotangent ``w`` of the output, ``<J v, w>`` (forward mode,
``s2sad.transforms.jvp``) must equal ``<v, J^T w>`` (reverse mode, ``s2sad.vjp``).
"""
import copy

import numpy as np

import s2sad
from s2sad import testing as _t
from s2sad import transforms


def _fresh(args):
    """A deep copy of the arguments (the function may write into them)."""
    return copy.deepcopy(args)


def check_consistency(f, args, wrt=None, *, seed=0, rtol=1e-8, atol=1e-10, n_dirs=2):
    if not isinstance(args, tuple):
        args = (args,)
    positions, _ = _t._normalise_wrt(f, args, wrt)
    rng = np.random.default_rng(seed)
    for _ in range(n_dirs):
        tangents = [None] * len(args)
        for i in positions:
            tangents[i] = _t._random_tree(args[i], rng)
        value, jv = transforms.jvp(f, _fresh(args), tuple(tangents))
        w = _t._random_tree(value, rng)
        value2, pull = s2sad.vjp(f, *_fresh(args))
        cts = pull(w)
        lhs = _t._tree_inner(w, jv)
        rhs = 0.0
        for i in positions:
            if cts[i] is not None:
                rhs += _t._tree_inner(tangents[i], cts[i])
        scale = max(1.0, abs(lhs), abs(rhs))
        assert abs(lhs - rhs) <= atol + rtol * scale, \
            f"{getattr(f, '__qualname__', f)}: <J v, w> = {lhs!r} (forward) but <v, J^T w> = " \
            f"{rhs!r} (reverse)"
    return True


def check_forward(f, args, wrt=None, **kw):
    """Forward mode against finite differences (``check_grads(modes=("fwd",))``), then the
    forward/reverse dot-product test."""
    if not isinstance(args, tuple):
        args = (args,)
    kw.pop("modes", None)
    _t.check_grads(f, _fresh(args), wrt, modes=("fwd",), **kw)
    check_consistency(f, args, wrt, seed=kw.get("seed", 0))


def fd_grad(gradf, x, eps=1e-6):
    """Central differences of a gradient function (a Hessian column per input element)."""
    x = np.asarray(x, dtype=float)
    cols = []
    for k in range(x.size):
        e = np.zeros_like(x)
        e.flat[k] = eps
        cols.append((np.asarray(gradf(x + e)) - np.asarray(gradf(x - e))) / (2 * eps))
    return np.stack(cols, axis=-1).reshape(np.shape(gradf(x)) + x.shape)
