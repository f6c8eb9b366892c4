"""Run one generated program and judge s2sad's derivatives of it, in both modes.

For ``f(x, y)`` (``x`` a float64 array of length 3, ``y`` a float) at a random point, along a
random direction ``(vx, vy)``:

* reverse: ``value, pullback = s2sad.vjp(f, x, y)``; ``w * <(gx, gy), (vx, vy)>`` for a cotangent ``w``
* forward: ``value, tangent = s2sad.jvp(f, (x, y), (vx, vy))``
* ``revjit``: ``s2sad.value_and_grad(f, argnums=(0, 1), jit=True)(x, y)``, dotted with the direction
* ``fwdjit``: ``s2sad.jvp(f, (x, y), (vx, vy), jit=True)``

are compared with central differences of the plain function.  The value must match ``f(x, y)``.
A jit mode's derivative (the gradient, or the tangent) must also equal its Python mode's
(``rev``/``fwd``, run for the comparison when not asked for) to ``JIT_RTOL`` relative.

Outcomes of a mode:

``agree``    the derivative matches central differences
``fellback`` (jit modes) right, but numba could not compile it: a ``JitFallbackWarning``, and
             the derivative ran as Python
``refused``  an :class:`s2sad.errors.S2SADError` whose message names the program's file:line and
             has a ``Fix:``
``wrong``    a value or derivative that does not match (a silently wrong answer)
``crash``    any other exception (including an S2SADError without file:line or Fix, a
             RecursionError, a timeout)

A program is discarded, not judged, when the plain function raises or returns a non-finite or
non-real value (``invalid``), or when the function is not differentiable at the point: central
differences at two step sizes disagree, or a perturbed evaluation raises (``nonsmooth``).
"""
import importlib.util
import itertools
import linecache
import os
import re
import signal
import sys
import tempfile
import traceback
import warnings

import numpy as np

JUDGED = ("agree", "fellback", "refused", "wrong", "crash")
DISCARDED = ("invalid", "nonsmooth")
ORDER = {"wrong": 0, "crash": 1, "refused": 2, "fellback": 3, "agree": 4, "nonsmooth": 5,
         "invalid": 6}
MODES = ("rev", "fwd")
JIT_MODES = ("revjit", "fwdjit")
ALL_MODES = MODES + JIT_MODES
PYTHON_OF = {"revjit": "rev", "fwdjit": "fwd"}   # the Python mode a jit mode is compared with
JIT_RTOL = 1e-9                                  # jit vs Python mode, relative

H1, H2 = 1e-6, 1e-5          # the two central-difference steps
RTOL, ATOL = 1e-5, 1e-6


class Timeout(BaseException):
    """Raised by the alarm; a BaseException so that ``except Exception`` in s2sad does not eat it."""


class ModeResult:
    def __init__(self, outcome, detail="", signature="", numbers=None):
        self.outcome = outcome
        self.detail = detail
        self.signature = signature or outcome
        self.numbers = numbers      # the derivative (gradient of w * f, or the tangent)

    def __repr__(self):
        return f"{self.outcome}: {self.detail}"


class Result:
    """The judgement of one program: ``outcome`` (the worst over modes), ``modes`` (per mode)."""

    def __init__(self, outcome, modes=None, detail=""):
        self.outcome = outcome
        self.modes = modes or {}
        self.detail = detail

    @property
    def mode(self):
        """The first mode with the program's outcome."""
        for m, r in self.modes.items():
            if r.outcome == self.outcome:
                return m
        return None

    @property
    def signature(self):
        """A short description of the failure class, for grouping."""
        m = self.mode
        if m is None:
            return self.outcome
        return f"{m}:{self.modes[m].signature}"

    def report(self):
        lines = [f"outcome: {self.outcome}" + (f" ({self.detail})" if self.detail else "")]
        for m, r in self.modes.items():
            lines.append(f"  {m}: {r.outcome}" + (f": {r.detail}" if r.detail else ""))
        return "\n".join(lines)

    def __repr__(self):
        return self.report()


# -- loading --------------------------------------------------------------------------------
_TMP = None
_COUNT = itertools.count()


def _tmpdir():
    global _TMP
    if _TMP is None or not os.path.isdir(_TMP):
        _TMP = tempfile.mkdtemp(prefix="s2sad_fuzz_")
    return _TMP


class Loaded:
    """A program written to a fresh .py file and imported as a real module."""

    def __init__(self, source, stem="prog"):
        n = next(_COUNT)
        self.modname = f"s2sad_fuzz_{os.getpid()}_{n}"
        self.path = os.path.join(_tmpdir(), f"{stem}_{os.getpid()}_{n}.py")
        with open(self.path, "w") as fh:
            fh.write(source)
        spec = importlib.util.spec_from_file_location(self.modname, self.path)
        self.module = importlib.util.module_from_spec(spec)
        sys.modules[self.modname] = self.module
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                spec.loader.exec_module(self.module)
        except BaseException:
            self.close()
            raise
        self.f = self.module.f

    def close(self):
        sys.modules.pop(self.modname, None)
        linecache.cache.pop(self.path, None)
        try:
            os.remove(self.path)
        except OSError:
            pass


# -- judging --------------------------------------------------------------------------------
def _plain(f, x, y):
    with np.errstate(all="raise"), warnings.catch_warnings():
        warnings.simplefilter("error")
        v = f(x.copy(), y)
    a = np.asarray(v)
    if a.dtype.kind not in "fiu" or a.shape != ():
        raise TypeError(f"not a real scalar: {type(v).__name__} {a.dtype} {a.shape}")
    if not np.isfinite(a):
        raise FloatingPointError("not finite")
    return float(a)


def _refusal_ok(e, path):
    msg = str(e)
    base = re.escape(os.path.basename(path))
    return bool(re.search(base + r":\d+", msg)) and "Fix:" in msg


_NUM = re.compile(r"0x[0-9a-f]+|\d+")


def _exc_signature(e):
    """Exception type and the first line of its message, with names of programs and numbers
    blanked (so that one bug found in many programs gives one signature)."""
    msg = str(e).strip().splitlines()[0] if str(e).strip() else ""
    msg = re.sub(r"\S*prog_\d+_\d+\.py:?\d*:? ?", "", msg)
    msg = re.sub(r"`_\d+`", "`_N`", msg)
    msg = re.sub(r"\b[a-z]+\d+\b", "<v>", msg)
    msg = _NUM.sub("N", msg)
    return f"{type(e).__name__}: {msg[:120]}"


def _where(tb_exc):
    """The innermost frame of a traceback, as 'file:line in func'."""
    fr = traceback.extract_tb(tb_exc.__traceback__)
    if not fr:
        return ""
    last = fr[-1]
    return f"{os.path.basename(last.filename)}:{last.lineno} in {last.name}"


def _as_float(g, shape):
    if g is None:
        return np.zeros(shape)
    a = np.asarray(g)
    if a.dtype == object:
        a = a.astype(float)
    return a


def _judge(ad, fd, fd2, fscale, what):
    tol = RTOL * max(1.0, abs(fd)) + ATOL * max(1.0, fscale)
    if not np.isfinite(ad) or abs(ad - fd) > tol:
        return ModeResult("wrong", f"{what} {ad!r} but central differences give {fd!r} "
                                   f"(step {H2}: {fd2!r})", f"wrong {what}")
    return ModeResult("agree")


def _mode(mode, f, path, x, y, vx, vy, w, value, fd1, fd2):
    import s2sad
    from s2sad.errors import JitFallbackWarning, S2SADError
    fscale = abs(value)
    fell = None
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            if mode in ("rev", "revjit"):
                if mode == "rev":
                    v, pullback = s2sad.vjp(f, x.copy(), y)
                    gs = pullback(w)
                else:
                    v, g = s2sad.value_and_grad(f, argnums=(0, 1), jit=True)(x.copy(), y)
                    if not isinstance(g, tuple) or len(g) != 2:
                        return ModeResult("wrong", f"gradient {g!r}", "wrong structure")
                    gs = tuple(None if gi is None else w * np.asarray(gi) for gi in g)
                if not isinstance(gs, tuple) or len(gs) != 2:
                    return ModeResult("wrong", f"pullback returned {gs!r}", "wrong structure")
                gx = _as_float(gs[0], x.shape)
                gy = _as_float(gs[1], ())
                if gx.shape != x.shape or gy.shape != ():
                    return ModeResult("wrong", f"gradient shapes {gx.shape}, {gy.shape}",
                                      "wrong shape")
                if np.iscomplexobj(gx) or np.iscomplexobj(gy):
                    # (float() below would drop an imaginary part: x and y are real)
                    return ModeResult("wrong", f"complex gradient of real inputs: {gx!r}, {gy!r}",
                                      "complex gradient")
                ad = float(np.dot(gx, vx) + gy * vy)
                want, want2 = w * fd1, w * fd2
                numbers = np.concatenate([gx.ravel(), gy.ravel()]).astype(float)
            else:
                v, t = s2sad.jvp(f, (x.copy(), y), (vx.copy(), vy),
                                 jit=True if mode == "fwdjit" else None)
                t = _as_float(t, ())
                if t.shape != ():
                    return ModeResult("wrong", f"tangent shape {t.shape}", "wrong shape")
                if np.iscomplexobj(t):
                    return ModeResult("wrong", f"complex tangent of a real output: {t!r}",
                                      "complex tangent")
                ad = float(t)
                want, want2 = fd1, fd2
                numbers = np.array([ad])
        for c in caught:
            if issubclass(c.category, JitFallbackWarning):
                fell = str(c.message).splitlines()[0]
                break
    except Timeout:
        raise
    except S2SADError as e:
        if _refusal_ok(e, path):
            return ModeResult("refused", str(e).splitlines()[0][:200], "refused " + _exc_signature(e)[:90])
        return ModeResult("crash", f"refusal without file:line or Fix: {type(e).__name__}: {e}",
                          "bad refusal " + _exc_signature(e))
    except RecursionError as e:
        return ModeResult("crash", f"RecursionError at {_where(e)}", "RecursionError")
    except Exception as e:
        return ModeResult("crash", f"{type(e).__name__}: {str(e)[:300]} [at {_where(e)}]",
                          _exc_signature(e))
    try:
        vf = float(np.asarray(v))
    except Exception:
        return ModeResult("wrong", f"value {v!r} is not a float", "wrong value type")
    if not abs(vf - value) <= 1e-9 * max(1.0, abs(value)):
        return ModeResult("wrong", f"value {vf!r} but f gives {value!r}", "wrong value")
    r = _judge(ad, want, want2, fscale, "derivative")
    r.numbers = numbers
    if r.outcome == "agree" and fell is not None:
        r = ModeResult("fellback", fell[:200], "fellback " + _exc_signature(Exception(fell))[11:90],
                       numbers)
    return r


def _against_python(r, ref):
    """A jit mode's result ``r`` against its Python mode's ``ref``: the same derivative to
    JIT_RTOL (relative to the largest entry, at least 1), or ``wrong``."""
    if r.outcome not in ("agree", "fellback") or ref is None or ref.numbers is None:
        return r
    a, b = r.numbers, ref.numbers
    if a.shape != b.shape:
        return ModeResult("wrong", f"derivative {a!r} but Python mode gives {b!r}",
                          "wrong vs Python mode", a)
    tol = JIT_RTOL * max(1.0, float(np.max(np.abs(b))) if b.size else 1.0)
    if not np.all(np.abs(a - b) <= tol):
        return ModeResult("wrong", f"derivative {a!r} but Python mode gives {b!r} (jit vs Python "
                                   f"beyond {JIT_RTOL} relative)", "wrong vs Python mode", a)
    return r


def _start_alarm(timeout):
    """Raise :class:`Timeout` after ``timeout`` seconds (where the platform has SIGALRM); the
    handler it replaced, for :func:`_stop_alarm`, or None."""
    if not (timeout and hasattr(signal, "SIGALRM")):
        return None

    def _alarm(signum, frame):
        raise Timeout()
    old = signal.signal(signal.SIGALRM, _alarm)
    signal.alarm(int(timeout))
    return old


def _stop_alarm(old):
    if old is not None:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


def check_source(source, seed=0, modes=MODES, timeout=60):
    """Judge the program ``source`` (defining ``f(x, y)``) at a point drawn from ``seed``."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(3)
    y = float(rng.standard_normal())
    vx = rng.standard_normal(3)
    vy = float(rng.standard_normal())
    w = float(0.5 + rng.random())

    old = _start_alarm(timeout)
    loaded = None
    try:
        try:
            loaded = Loaded(source)
            f = loaded.f
            value = _plain(f, x, y)

            def fd(h):
                return (_plain(f, x + h * vx, y + h * vy) - _plain(f, x - h * vx, y - h * vy)) / (2 * h)
        except Timeout:
            return Result("invalid", detail="timeout in the plain function")
        except Exception as e:
            return Result("invalid", detail=f"{type(e).__name__}: {str(e)[:200]}")
        try:
            fd1, fd2 = fd(H1), fd(H2)
        except Timeout:
            return Result("nonsmooth", detail="timeout in central differences")
        except Exception as e:
            return Result("nonsmooth", detail=f"perturbed f raises {type(e).__name__}")
        if abs(fd1 - fd2) > 10 * RTOL * max(1.0, abs(fd1)) + ATOL * max(1.0, abs(value)):
            return Result("nonsmooth", detail=f"steps disagree: {fd1!r} vs {fd2!r}")
        res = {}
        refs = {}
        for m in modes:
            try:
                res[m] = _mode(m, f, loaded.path, x, y, vx, vy, w, value, fd1, fd2)
                if m in PYTHON_OF:
                    py = PYTHON_OF[m]
                    if py not in res:
                        _clear_cache()
                        refs[py] = _mode(py, f, loaded.path, x, y, vx, vy, w, value, fd1, fd2)
                    res[m] = _against_python(res[m], res.get(py, refs.get(py)))
            except Timeout:
                res[m] = ModeResult("crash", f"timeout after {timeout}s", "timeout")
                break
            finally:
                _clear_cache()
        worst = min((r.outcome for r in res.values()), key=ORDER.__getitem__)
        return Result(worst, res)
    finally:
        _stop_alarm(old)
        if loaded is not None:
            loaded.close()


def njit_primal(source, seed=0, timeout=30):
    """Whether ``numba.njit`` compiles and runs the program's plain ``f`` at the point
    :func:`check_source` draws from ``seed``: a program whose derivative falls back with
    ``jit=True`` although numba compiles the function itself is a gap of the compiled mode (most
    fallbacks are Python objects numba cannot compile either)."""
    import numba
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(3)
    y = float(rng.standard_normal())
    old = _start_alarm(timeout)
    loaded = None
    try:
        loaded = Loaded(source)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            numba.njit(loaded.f)(x, y)
        return True
    except Exception:            # (numba's typing errors, the program's own, Timeout)
        return False
    finally:
        _stop_alarm(old)
        if loaded is not None:
            loaded.close()


def _clear_cache():
    try:
        from s2sad.cache import CACHE
        CACHE.clear()
    except Exception:
        pass
