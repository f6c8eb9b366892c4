"""Issue 12 item 3, jit mode: a reverse loop writes its adjoint buffers in place.

Where a loop body only writes single elements of a typed real array (``y[i] = v``) or only reads
single elements of one (``x[i]``, x read only by indexing), the compiled derivative gives its
adjoint a buffer of its own before the reverse loop (``_rt.own``, runtime/jit.py) and the loop
reads, zeroes and adds elements in place, instead of ``_rt.setitem_adjoint`` copying the whole
adjoint per element write; inside an enclosing loop, the array's shape alone is saved for it (no
array reference pushed per element read).  Every derivative here compiles without a
JitFallbackWarning and gives Python mode's numbers (1e-12) and finite differences'."""
import re
import warnings

import numpy as np
import pytest

import s2sad
from s2sad.errors import JitFallbackWarning, S2SADError

from .compare import same_as_python

pytest.importorskip("numba")

_R = np.random.default_rng(31)


def _chain_step(x, v, k, dt):               # examples/particles_numba.py's step, without drag
    n = x.shape[0]
    xn = np.empty(n)
    vn = np.empty(n)
    for i in range(n):
        left = x[i - 1] if i > 0 else 0.0
        f = -k * (x[i] - left - 1.0)
        if i < n - 1:
            f = f + k * (x[i + 1] - x[i] - 1.0)
        vi = v[i] + dt * (f - 0.1 * v[i] * abs(v[i]))
        vn[i] = vi
        xn[i] = x[i] + dt * vi
    return xn, vn


def chain(x0, v0, k):
    x, v = x0, v0
    for t in range(5):
        x, v = _chain_step(x, v, k, 0.05)
    e = 0.0
    for i in range(x.shape[0]):
        e = e + (x[i] - 1.5 * i) ** 2
    return e + 0.5 * np.sum(v ** 2)


def naive_map2(x):                          # a 2-d buffer written element by element
    out = np.zeros((x.shape[0], x.shape[1]))
    for i in range(x.shape[0]):
        for j in range(x.shape[1]):
            out[i, j] = np.sin(np.cos(np.exp(x[i, j])))
    return np.sum(out * out)


def read_write_same(x, s):                  # y[i - 1] read and y[i] written, in place
    y = x * 1.0
    for i in range(1, y.shape[0]):
        y[i] = y[i - 1] * s + y[i]
    return np.sum(y * y)


def two_inputs(a, b):                       # called with one array for both (aliased inputs)
    out = np.zeros(a.shape[0])
    for i in range(a.shape[0]):
        out[i] = a[i] * b[i] + a[i]
    return np.sum(out ** 2)


def alias_read_after_write(x):              # z is y: z read after y's element writes
    y = np.zeros(x.shape[0])
    z = y
    for i in range(x.shape[0]):
        y[i] = x[i] ** 2
    return np.sum(z * x)




def _code(f, wrt, args):
    src = s2sad.differentiate(f, wrt=wrt).adjoint_source(*args, jit=True)
    return "\n".join(ln.split("#")[0].rstrip() for ln in src.splitlines())


def _chain_args():
    n = 6
    return (np.arange(1.0, n + 1) + 0.1 * _R.standard_normal(n), 0.3 * _R.standard_normal(n), 2.0)


def test_chain_compiles_and_matches():
    same_as_python(chain, _chain_args(), (0, 1, 2))


def test_chain_source_owns_buffers():
    code = _code(chain, (0, 1, 2), _chain_args())
    assert "setitem_adjoint" not in code and "acc_getitem" not in code
    # the element writes: read and zeroed in place, in the buffers owned before the loop
    assert re.search(r"_b_chain_step\d+_xn\[_chain_step\d+_i\] = 0\.0", code), code
    assert re.search(r"_b_chain_step\d+_x\[_chain_step\d+_i\] \+= _b_", code), code
    owned = re.findall(r"(_b_\w+) = _rt\.own\(([^,]+), (.+)\)$", code, re.M)
    assert sorted(o[0].split("_chain_step")[1].split("_", 1)[1] for o in owned
                  if "_chain_step" in o[0]) == ["v", "vn", "x", "xn"]
    # inside the loop over steps the arrays' shapes are saved, once per step, not the arrays
    assert all(o[2].startswith("_adj.standin(_shape") for o in owned if "_chain_step" in o[0])
    assert not re.search(r"\.append\(_chain_step\d+_(x|v|xn|vn)\)", code), code
    assert "_rt.snap(" not in code
    # the top-level loop reading x[i] owns its buffer too
    assert re.search(r"^ *_b_x = _rt\.own\(0\.0, x\)$", code, re.M), code


def test_naive_map_2d():
    x = _R.standard_normal((3, 4))
    g, = same_as_python(naive_map2, (x,), (0,))
    e = np.exp(x)
    want = 2 * np.sin(np.cos(e)) * np.cos(np.cos(e)) * -np.sin(e) * e
    np.testing.assert_allclose(g, want, rtol=1e-12)
    code = _code(naive_map2, (0,), (x,))
    assert "setitem_adjoint" not in code and "_b_out[i, j] = 0.0" in code
    assert "_b_x[i, j] += " in code


def test_read_and_write_of_one_array_in_place():
    x, s = _R.standard_normal(5), 0.7
    g = same_as_python(read_write_same, (x, s), (0, 1))
    # y_i = s y_{i-1} + x_i: y = L x with L[i, j] = s^(i-j) (j <= i)
    L = np.tril(s ** np.subtract.outer(np.arange(5), np.arange(5)).clip(0))
    np.testing.assert_allclose(g[0], 2 * L.T @ (L @ x), rtol=1e-12)
    # (both by element: the loop owns y's adjoint, reads and zeroes y[i]'s, adds to y[i - 1]'s;
    # no copy of the adjoint per write, no snapshot of y per read)
    code = _code(read_write_same, (0, 1), (x, s))
    assert re.search(r"^ *_b_y = _rt\.own\(", code, re.M), code
    assert "_rt.setitem_adjoint(_b_y" not in code and "_rt.snap(y)" not in code, code


def test_aliased_inputs():
    a = _R.standard_normal(4)
    ga, gb = same_as_python(two_inputs, (a, a), (0, 1))
    out = a * a + a
    np.testing.assert_allclose(ga, 2 * out * (a + 1), rtol=1e-12)
    np.testing.assert_allclose(gb, 2 * out * a, rtol=1e-12)


def test_alias_read_after_element_writes_refused_in_both_modes():
    x = _R.standard_normal(4)
    errs = []
    for jit in (False, True):
        with warnings.catch_warnings():
            warnings.simplefilter("error", JitFallbackWarning)
            with pytest.raises(S2SADError) as e:
                s2sad.value_and_grad(alias_read_after_write, jit=jit)(x)
        errs.append(str(e.value))
    assert errs[0] == errs[1] and "test_jit_loop_buffers.py" in errs[0] and "Fix:" in errs[0]
