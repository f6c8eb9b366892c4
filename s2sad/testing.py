"""Checking derivatives against finite differences.

:func:`check_grads` is what s2sad's own test suite uses, and it is public so that you can check
your functions (and your own rules) the same way::

    import numpy as np
    from s2sad.testing import check_grads

    def f(W, x):
        return np.sum(np.tanh(W @ x))

    rng = np.random.default_rng(0)
    check_grads(f, (rng.standard_normal((3, 4)), rng.standard_normal(4)), wrt=(0, 1))

How it checks (reverse mode, the *dot-product test*): for a random cotangent ``w`` shaped like
the output and a random direction ``v`` shaped like one input leaf,

    <vjp(w), v>   must equal   <w, (f(x + eps v) - f(x - eps v)) / (2 eps)>

The left side comes from s2sad's generated reverse sweep, the right side from central differences
of the plain function.  Because it compares one number per direction, it works for scalar and
array outputs alike and needs only two evaluations of ``f`` per direction.  For scalar real
outputs :func:`s2sad.grad` is checked as well (with ``w = 1``).

Conventions:

* Arguments and outputs may be floats, complex numbers, NumPy arrays, or *pytrees* of them
  (tuples, lists, dicts and dataclass instances, nested).  Integers, booleans, strings and integer arrays are not
  perturbed: they carry no derivative.
* Complex values are pairs of reals.  The gradient of a real loss ``L`` with respect to a complex
  ``z`` is ``dL/dRe z + i dL/dIm z``, and the inner product used above is ``Re sum(conj(a) * b)``.
* Use float64 / complex128 inputs: with ``eps = 1e-6`` central differences are accurate to about
  1e-9 in float64, and not at all in float32.
"""
import numbers

import numpy as np

__all__ = ["check_grads", "numerical_grad"]


# -- pytrees ----------------------------------------------------------------------------------
class _Attr:
    """A path step into a dataclass field (its gradient is the same dataclass, or a dict)."""
    __slots__ = ("name",)

    def __init__(self, name):
        self.name = name

    def __repr__(self):
        return f".{self.name}"


def _is_dataclass_value(x):
    import dataclasses
    return dataclasses.is_dataclass(x) and not isinstance(x, type)


def _is_container(x):
    return isinstance(x, (tuple, list, dict)) or _is_dataclass_value(x)


def _is_float_leaf(x):
    """A leaf that carries a derivative: a Python float/complex, or a floating/complex array."""
    if isinstance(x, bool):
        return False
    if isinstance(x, (float, complex)):
        return True
    if isinstance(x, numbers.Integral):
        return False
    dt = getattr(x, "dtype", None)
    return isinstance(dt, np.dtype) and dt.kind in "fc" and not isinstance(x, type)


def _leaves(x, path=()):
    """(path, leaf) for every leaf of a pytree, in a fixed order."""
    if isinstance(x, dict):
        for k in x:
            yield from _leaves(x[k], path + (k,))
    elif isinstance(x, (tuple, list)):
        for i, v in enumerate(x):
            yield from _leaves(v, path + (i,))
    elif _is_dataclass_value(x):
        import dataclasses
        for fld in dataclasses.fields(x):
            yield from _leaves(getattr(x, fld.name), path + (_Attr(fld.name),))
    else:
        yield path, x


def _get(x, path):
    for p in path:
        if x is None:
            return None
        if isinstance(x, (float, int)) and not isinstance(x, bool) and x == 0:
            return None             # a zero adjoint standing for a whole container
        if isinstance(p, _Attr):
            x = x.get(p.name) if isinstance(x, dict) else getattr(x, p.name, None)
        else:
            x = x[p]
    return x


def _replace(x, path, new):
    """A copy of pytree ``x`` with the leaf at ``path`` replaced by ``new``."""
    if not path:
        return new
    head, rest = path[0], path[1:]
    if isinstance(head, _Attr):
        if isinstance(x, dict):                 # an object's tangent: a dict of attribute tangents
            return {**x, head.name: _replace(x.get(head.name), rest, new)}
        import dataclasses
        return dataclasses.replace(x, **{head.name: _replace(getattr(x, head.name), rest, new)})
    if isinstance(x, dict):
        out = dict(x)
        out[head] = _replace(x[head], rest, new)
        return out
    items = list(x)
    items[head] = _replace(x[head], rest, new)
    if isinstance(x, tuple):
        return type(x)(*items) if hasattr(x, "_fields") else tuple(items)
    return items


def _path_str(path):
    return "".join(repr(p) if isinstance(p, _Attr) else f"[{p!r}]" for p in path)


# -- random values and inner products ---------------------------------------------------------
def _random_like(x, rng):
    """A random value with the shape and dtype of leaf ``x`` (standard normal parts)."""
    shape = np.shape(x)
    dt = np.result_type(x)
    r = rng.standard_normal(shape)
    if dt.kind == "c":
        r = r + 1j * rng.standard_normal(shape)
    if isinstance(x, (float, complex)) and not isinstance(x, np.generic):
        return type(x)(r)
    if isinstance(x, np.generic):
        return dt.type(r)
    xp = _array_module(x)
    return xp.asarray(r, dtype=dt)


def _random_tree(x, rng):
    """A random cotangent for an output pytree; non-float leaves get None."""
    if isinstance(x, dict):
        return {k: _random_tree(v, rng) for k, v in x.items()}
    if isinstance(x, (tuple, list)):
        items = [_random_tree(v, rng) for v in x]
        if isinstance(x, tuple):
            return type(x)(*items) if hasattr(x, "_fields") else tuple(items)
        return items
    return _random_like(x, rng) if _is_float_leaf(x) else None


def _array_module(x):
    if type(x).__module__.startswith("cupy"):
        import cupy
        return cupy
    return np


def _to_numpy(x):
    if hasattr(x, "get") and type(x).__module__.startswith("cupy"):
        return x.get()
    return np.asarray(x)


def _inner(a, b):
    """Re sum(conj(a) * b) for two leaves (None is zero)."""
    if a is None or b is None:
        return 0.0
    a, b = _to_numpy(a), _to_numpy(b)
    return float(np.real(np.sum(np.conj(a) * b)))


def _tree_inner(a, b):
    """Re <a, b> summed over matching leaves of two pytrees (b may have None leaves)."""
    total = 0.0
    for path, leaf in _leaves(a):
        if not _is_float_leaf(leaf):
            continue
        total += _inner(leaf, _get(b, path))
    return total


def _tree_abs(a):
    """Sum of |leaf| over float leaves (the scale of a loss, for round-off estimates)."""
    total = 0.0
    for _, leaf in _leaves(a):
        if _is_float_leaf(leaf):
            total += float(np.sum(np.abs(_to_numpy(leaf))))
    return total


def _axpy(x, a, v):
    """x + a * v for one leaf, keeping Python scalars Python scalars."""
    if isinstance(x, (float, complex)) and not isinstance(x, np.generic):
        return type(x)(x + a * v)
    return x + a * v


# -- which arguments ----------------------------------------------------------------------------
def _param_names(f):
    try:
        from .callables import _positional_names  # partials, callable objects, callees with rules
        return _positional_names(f)
    except Exception:
        return None


def _normalise_wrt(f, args, wrt):
    """Positions of the arguments to check, and whether one (not a tuple) was asked for."""
    names = _param_names(f)
    if wrt is None:
        pos = [i for i, a in enumerate(args) if any(_is_float_leaf(l) for _, l in _leaves(a))]
        if not pos:
            raise ValueError("check_grads: no argument carries a derivative (no float, complex or "
                             "floating-point array among the arguments)")
        return pos, False
    single = not isinstance(wrt, (tuple, list))
    out = []
    for w in ([wrt] if single else wrt):
        if isinstance(w, str):
            if names is None or w not in names:
                raise ValueError(f"check_grads: wrt={w!r} is not a parameter name of "
                                 f"{getattr(f, '__qualname__', f)} {names}")
            i = names.index(w)
        else:
            i = int(w)
            if not -len(args) <= i < len(args):
                raise ValueError(f"check_grads: wrt={w} but {len(args)} argument(s) were given")
            i %= len(args)
        if i >= len(args):
            raise ValueError(f"check_grads: wrt={w!r} names an argument that was not passed")
        out.append(i)
    return out, single


def _arg_name(f, i):
    names = _param_names(f)
    if names is not None and i < len(names):
        return f"argument {i} ({names[i]!r})"
    return f"argument {i}"


# -- the checks ---------------------------------------------------------------------------------
def _close(num, ad, rtol, atol, roundoff):
    return abs(num - ad) <= atol + rtol * max(abs(num), abs(ad)) + roundoff


def _check_leaf_grad(grad_leaf, leaf, label):
    """Shape and dtype of one gradient leaf against its argument leaf."""
    if grad_leaf is None or (type(grad_leaf) is float and grad_leaf == 0.0):
        return
    gs, xs = np.shape(grad_leaf), np.shape(leaf)
    if gs != xs:
        raise AssertionError(f"{label}: gradient has shape {gs}, but the argument has shape {xs}")
    xdt = getattr(leaf, "dtype", None)
    gdt = getattr(grad_leaf, "dtype", None)
    if isinstance(leaf, complex) or (xdt is not None and xdt.kind == "c"):
        return
    if gdt is not None and gdt.kind == "c":
        raise AssertionError(f"{label}: gradient of a real argument is complex ({gdt})")
    if isinstance(grad_leaf, complex):
        raise AssertionError(f"{label}: gradient of a real argument is complex ({grad_leaf!r})")
    if xdt is not None and gdt is not None and gdt != xdt and np.ndim(leaf) > 0:
        raise AssertionError(f"{label}: gradient has dtype {gdt}, but the argument has dtype {xdt}")


def _dot_test(f, args, positions, grads, w, *, eps, rtol, atol, rng, n_dirs, what):
    """Compare <grads[i], v> with <w, central difference of f along v>, leaf by leaf."""
    for i, g in zip(positions, grads):
        for path, leaf in _leaves(args[i]):
            if not _is_float_leaf(leaf):
                continue
            label = f"{what}: {_arg_name(f, i)}{_path_str(path)}"
            gl = _get(g, path) if g is not None else None
            _check_leaf_grad(gl, leaf, label)
            for d in range(n_dirs):
                v = _random_like(leaf, rng)
                _compare_with_differences(f, args, i, path, leaf, v, w, _inner(gl, v), eps, rtol,
                                          atol, label, d)


def _compare_with_differences(f, args, i, path, leaf, v, w, ad, eps, rtol, atol, label, d):
    """Check the derivative ``ad`` = <w, J v> against central differences of f along v."""
    plus, minus = list(args), list(args)
    plus[i] = _replace(args[i], path, _axpy(leaf, eps, v))
    minus[i] = _replace(args[i], path, _axpy(leaf, -eps, v))
    fp, fm = f(*plus), f(*minus)
    num = (_tree_inner(w, fp) - _tree_inner(w, fm)) / (2 * eps)
    # central differences lose about eps_machine * |L| / eps to round-off
    roundoff = 64 * np.finfo(np.float64).eps * (
        _tree_abs(_scaled(w, fp)) + _tree_abs(_scaled(w, fm))) / (2 * eps)
    if not _close(num, ad, rtol, atol, roundoff):
        raise AssertionError(
            f"{label}: directional derivative mismatch (direction {d}, eps={eps}):\n"
            f"  expected (central differences) {num!r}\n"
            f"  got      (s2sad)               {ad!r}\n"
            f"  abs err {abs(num - ad):.3e}, rel err "
            f"{abs(num - ad) / max(abs(num), abs(ad), 1e-300):.3e} (rtol={rtol}, atol={atol})")


def _scaled(w, y):
    """Leafwise conj(w) * y (for the round-off estimate)."""
    out = []
    for path, leaf in _leaves(w):
        if _is_float_leaf(leaf):
            yl = _get(y, path)
            if yl is not None:
                out.append(_to_numpy(np.conj(_to_numpy(leaf)) * _to_numpy(yl)))
    return out


def _values_equal(a, b):
    la, lb = list(_leaves(a)), list(_leaves(b))
    if len(la) != len(lb):
        return False
    for (pa, xa), (pb, xb) in zip(la, lb):
        if pa != pb:
            return False
        if _is_float_leaf(xa) or _is_float_leaf(xb):
            xa, xb = _to_numpy(xa), _to_numpy(xb)
            if xa.shape != xb.shape or not np.allclose(xa, xb, rtol=1e-12, atol=1e-12,
                                                       equal_nan=True):
                return False
    return True


def _is_real_scalar(y):
    if isinstance(y, bool):
        return False
    if isinstance(y, float):
        return True
    dt = getattr(y, "dtype", None)
    return dt is not None and np.shape(y) == () and dt.kind == "f"


def _check_rev(f, args, positions, single, *, eps, rtol, atol, rng, n_dirs):
    import s2sad
    expected = f(*args)
    value, pullback = s2sad.vjp(f, *args)
    if not _values_equal(value, expected):
        raise AssertionError(f"s2sad.vjp: the value differs from the plain function's:\n"
                             f"  expected {expected!r}\n  got      {value!r}")
    w = _random_tree(value, rng)
    all_grads = pullback(w)
    if not isinstance(all_grads, tuple) or len(all_grads) != len(args):
        raise AssertionError(f"s2sad.vjp: the pullback returned {all_grads!r}; expected a tuple "
                             f"with one entry per positional argument ({len(args)})")
    for i in positions:
        if all_grads[i] is None:
            raise AssertionError(f"s2sad.vjp: the pullback returned None for "
                                 f"{_arg_name(f, i)}, which carries a derivative")
    grads = [all_grads[i] for i in positions]
    _dot_test(f, args, positions, grads, w, eps=eps, rtol=rtol, atol=atol, rng=rng,
              n_dirs=n_dirs, what="reverse mode (vjp)")

    if _is_real_scalar(value):
        wrt = positions[0] if single else tuple(positions)
        v2, g = s2sad.value_and_grad(f, wrt=wrt)(*args)
        if not _values_equal(v2, expected):
            raise AssertionError(f"s2sad.value_and_grad: the value differs from the plain "
                                 f"function's:\n  expected {expected!r}\n  got      {v2!r}")
        if single:
            g = (g,)
        elif not isinstance(g, tuple) or len(g) != len(positions):
            raise AssertionError(f"s2sad.grad with wrt={wrt!r} returned {g!r}; expected a tuple of "
                                 f"{len(positions)} gradients")
        _dot_test(f, args, positions, list(g), 1.0, eps=eps, rtol=rtol, atol=atol, rng=rng,
                  n_dirs=n_dirs, what="reverse mode (grad)")


def _zero_tangent(x):
    if isinstance(x, dict):
        return {k: _zero_tangent(v) for k, v in x.items()}
    if _is_dataclass_value(x):                  # forward mode takes an object's tangent as a dict
        import dataclasses
        return {f.name: _zero_tangent(getattr(x, f.name)) for f in dataclasses.fields(x)}
    if isinstance(x, (tuple, list)):
        items = [_zero_tangent(v) for v in x]
        if isinstance(x, tuple):
            return type(x)(*items) if hasattr(x, "_fields") else tuple(items)
        return items
    if not _is_float_leaf(x):
        return None
    if isinstance(x, (float, complex)) and not isinstance(x, np.generic):
        return type(x)(0)
    return _array_module(x).zeros_like(x)


def _check_fwd(f, args, positions, *, eps, rtol, atol, rng, n_dirs):
    """Forward mode: <w, jvp(v)> against <w, central difference along v>.

    Hook for forward mode: uses ``s2sad.transforms.jvp(f, primals, tangents) -> (value,
    tangent_out)`` (JAX's convention: ``primals`` and ``tangents`` are tuples with one entry per
    positional argument).  If s2sad has no forward mode yet this raises NotImplementedError."""
    try:
        from . import transforms
        jvp = transforms.jvp
    except (ImportError, AttributeError):
        raise NotImplementedError(
            "check_grads(modes=('fwd',)): forward mode is not available in this version of s2sad "
            "(no s2sad.transforms.jvp); check reverse mode with modes=('rev',)") from None
    for i in positions:
        for path, leaf in _leaves(args[i]):
            if not _is_float_leaf(leaf):
                continue
            label = f"forward mode (jvp): {_arg_name(f, i)}{_path_str(path)}"
            for d in range(n_dirs):
                v = _random_like(leaf, rng)
                tangents = [_zero_tangent(a) for a in args]
                tangents[i] = _replace(tangents[i], path, v)
                value, tout = jvp(f, tuple(args), tuple(tangents))
                w = _random_tree(value, rng)
                _compare_with_differences(f, args, i, path, leaf, v, w, _tree_inner(w, tout), eps,
                                          rtol, atol, label, d)


def check_grads(f, args, wrt=None, *, eps=1e-6, rtol=1e-5, atol=1e-7, seed=0, modes=("rev",),
                n_dirs=3):
    """Check s2sad's derivatives of ``f`` at ``args`` against central finite differences.

    Parameters
    ----------
    f : callable
        A Python function with source (or an ``@s2sad.differentiate`` function).
    args : tuple
        The positional arguments (a single non-tuple value is taken as one argument).  Each may be
        a float, complex, array, or a tuple/list/dict of them.
    wrt : int, str, tuple of them, or None
        Which arguments to check, by position or parameter name; None checks every argument that
        carries a derivative.
    eps : float
        Step of the central differences.
    rtol, atol : float
        Tolerances on each directional derivative: ``|fd - ad| <= atol + rtol * max(|fd|, |ad|)``
        plus an estimate of the round-off of the finite difference (``~ 64 eps_machine |L| /
        eps``).
    seed : int
        Seed of the random directions and cotangents (``np.random.default_rng(seed)``).
    modes : tuple of "rev" and/or "fwd"
        ``"rev"`` checks :func:`s2sad.vjp` (dot-product test with a random output cotangent) and,
        for real scalar outputs, :func:`s2sad.value_and_grad`.  ``"fwd"`` checks forward mode
        through ``s2sad.transforms.jvp``; it raises NotImplementedError where forward mode is not
        available.
    n_dirs : int
        Random directions per argument leaf.

    Raises
    ------
    AssertionError
        naming the mode, the argument (and the leaf inside a pytree), the expected (finite
        difference) and the obtained (s2sad) directional derivative.
    """
    if not isinstance(args, tuple):
        args = (args,)
    positions, single = _normalise_wrt(f, args, wrt)
    for i in positions:
        if not any(_is_float_leaf(l) for _, l in _leaves(args[i])):
            raise ValueError(f"check_grads: {_arg_name(f, i)} = {args[i]!r} carries no derivative "
                             f"(pass float64 values)")
    rng = np.random.default_rng(seed)
    for mode in modes:
        if mode == "rev":
            _check_rev(f, args, positions, single, eps=eps, rtol=rtol, atol=atol, rng=rng,
                       n_dirs=n_dirs)
        elif mode == "fwd":
            _check_fwd(f, args, positions, eps=eps, rtol=rtol, atol=atol, rng=rng, n_dirs=n_dirs)
        else:
            raise ValueError(f"check_grads: unknown mode {mode!r}; use 'rev' and/or 'fwd'")


def numerical_grad(f, args, wrt=0, *, eps=1e-6):
    """The gradient of a real scalar ``f`` by central differences, element by element.

    Returns one gradient shaped like the argument (a tuple of them for a tuple ``wrt``), with the
    same complex convention as s2sad (``dL/dRe z + i dL/dIm z``).  Pytree arguments get pytree
    gradients.  Costs two evaluations of ``f`` per real degree of freedom: for small inputs."""
    if not isinstance(args, tuple):
        args = (args,)
    positions, single = _normalise_wrt(f, args, wrt)
    out = []
    for i in positions:
        g_arg = args[i]
        for path, leaf in _leaves(args[i]):
            if not _is_float_leaf(leaf):
                g_arg = _replace(g_arg, path, None)
                continue
            g_arg = _replace(g_arg, path, _numerical_leaf(f, args, i, path, leaf, eps))
        out.append(g_arg)
    return out[0] if single else tuple(out)


def _numerical_leaf(f, args, i, path, leaf, eps):
    x = _to_numpy(leaf)
    cplx = x.dtype.kind == "c"
    flat = x.astype(np.complex128 if cplx else np.float64).ravel()
    g = np.zeros_like(flat)

    def at(vec):
        new = vec.reshape(x.shape).astype(x.dtype)
        if isinstance(leaf, (float, complex)) and not isinstance(leaf, np.generic):
            new = type(leaf)(new)
        a = list(args)
        a[i] = _replace(args[i], path, new)
        y = f(*a)
        return float(np.real(_to_numpy(y)))

    for k in range(flat.size):
        for unit in ((1.0, 1j) if cplx else (1.0,)):
            p, m = flat.copy(), flat.copy()
            p[k] += eps * unit
            m[k] -= eps * unit
            g[k] += unit * (at(p) - at(m)) / (2 * eps)
    g = g.reshape(x.shape)
    if isinstance(leaf, (float, complex)) and not isinstance(leaf, np.generic):
        return type(leaf)(g)
    if isinstance(leaf, np.generic):
        return x.dtype.type(g)
    return _array_module(leaf).asarray(g)

