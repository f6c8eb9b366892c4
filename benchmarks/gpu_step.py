"""Whole gradient steps on the GPU: s2sad against PyTorch eager and JAX jit (issue 14, item 4).

    PYTHONPATH=$PWD:$PWD/build/gpu_deps python benchmarks/gpu_step.py [--quick] [--markdown]
    PYTHONPATH=$PWD python benchmarks/gpu_step.py --numpy --quick     # CPU smoke run (NumPy)

The steps are the six of issue 14 and the model of ``examples/gpu_attention.py``, each written once
against the array module of its input (``xp = get_array_module(x)``, CuPy's); the same source is
the CuPy primal, what s2sad differentiates, and (with ``get_array_module`` returning
``jax.numpy``) what JAX traces.  PyTorch runs hand-written ports of the same steps.

Columns, all float32, in ms per call (best of --repeat single calls after --warmup calls, each
between two device synchronisations, so host and device time are both in it):

* primal: the step's value alone, on CuPy (``--numpy``: NumPy);
* s2sad: ``s2sad.value_and_grad(step, wrt=<all parameters>)``;
* s2sad graph: the same with ``graph=True`` (a CUDA graph replayed from the second call; a
  ``GraphFallbackWarning`` on stderr says when a step could not be captured; "n/a" with --numpy);
* PyTorch: eager, autograd ``backward`` into fresh ``.grad`` buffers, TF32 off,
  ``torch.cuda.synchronize()`` around each call;
* JAX: ``jax.jit(jax.value_and_grad(step, argnums=...))`` traced and run inside
  ``jax.default_matmul_precision("float32")`` (full float32 matmuls), ``block_until_ready``.

"Device ms": the device time of one call alone: a few calls queued behind long matrix products
(so the host's launch work is hidden) and timed with the framework's CUDA events.  "sync" there
means the call waited for the device (a host synchronisation inside it), so its device time could
not be separated.  Gradients: the relative error ||g - g_ref|| / ||g_ref|| of every parameter
against PyTorch's (JAX's when PyTorch is missing).
"""
import argparse
import datetime
import importlib.util
import math
import os
import platform
import sys
import time

os.environ.setdefault("NUMBA_ENABLE_CUDASIM", "0")
import numpy as np  # noqa: E402

_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(_HERE))
import s2sad  # noqa: E402

try:
    import cupy
    from cupy import get_array_module
except ImportError:             # CPU-only machines: the same code on NumPy arrays (--numpy)
    cupy = None

    def get_array_module(*arrays):
        return np
    s2sad.defzero(get_array_module)

from s2sad.rules.namespaces import defnamespace  # noqa: E402


def _numpy_namespace(fn):
    """Declare the CPU fallback ``get_array_module`` a namespace function (NumPy for NumPy
    arrays), as ``cupy.get_array_module`` is: the --numpy run then differentiates the code the
    CuPy run does (``xp`` resolved when the derivative is built, no run-time dispatch)."""
    if cupy is None or fn is not cupy.get_array_module:
        defnamespace(fn, lambda libs: np if libs == {"numpy"} else None)


_numpy_namespace(get_array_module)

HEADS = 4


# -- the steps, written once against xp ----------------------------------------------------------

def attention_step(Wq, Wk, Wv, Wo, x, y):
    """4-head self-attention, skip path concatenate([x, o @ Wo]), tanh, mean squared error."""
    xp = get_array_module(x)
    B, T, D = x.shape
    dh = D // HEADS
    q = (x @ Wq).reshape(B, T, HEADS, dh).transpose(0, 2, 1, 3)
    k = xp.swapaxes((x @ Wk).reshape(B, T, HEADS, dh), 1, 2)
    v = xp.transpose((x @ Wv).reshape(B, T, HEADS, dh), (0, 2, 1, 3))
    s = (q @ xp.swapaxes(k, -1, -2)) * (1.0 / math.sqrt(dh))
    s = s - xp.max(s, axis=-1, keepdims=True)
    p = xp.exp(s)
    p = p / xp.sum(p, axis=-1, keepdims=True)
    o = xp.moveaxis(p @ v, 1, 2).reshape(B, T, D)
    h = xp.tanh(xp.concatenate([x, o @ Wo], axis=-1))
    err = h - y
    return xp.mean(err * err)


def mlp_step(W1, b1, W2, b2, W3, b3, x, t):
    """relu, tanh, log-softmax cross-entropy against one-hot targets ``t``."""
    xp = get_array_module(x)
    h = xp.maximum(x @ W1 + b1, 0.0)
    h = xp.tanh(h @ W2 + b2)
    z = h @ W3 + b3
    z = z - xp.max(z, axis=1, keepdims=True)
    logp = z - xp.log(xp.sum(xp.exp(z), axis=1, keepdims=True))
    return -xp.sum(logp * t) / x.shape[0]


def _example():
    path = os.path.join(os.path.dirname(_HERE), "examples", "gpu_attention.py")
    spec = importlib.util.spec_from_file_location("s2sad_example_gpu_attention", path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod            # s2sad reads its source through the module
    spec.loader.exec_module(mod)
    return mod


EXAMPLE = _example()
_numpy_namespace(EXAMPLE.get_array_module)


# -- PyTorch ports ---------------------------------------------------------------------------------

def attention_torch(Wq, Wk, Wv, Wo, x, y):
    import torch
    B, T, D = x.shape
    dh = D // HEADS
    q = (x @ Wq).reshape(B, T, HEADS, dh).permute(0, 2, 1, 3)
    k = torch.swapaxes((x @ Wk).reshape(B, T, HEADS, dh), 1, 2)
    v = (x @ Wv).reshape(B, T, HEADS, dh).permute(0, 2, 1, 3)
    s = (q @ torch.swapaxes(k, -1, -2)) * (1.0 / math.sqrt(dh))
    s = s - s.amax(dim=-1, keepdim=True)
    p = torch.exp(s)
    p = p / p.sum(dim=-1, keepdim=True)
    o = torch.moveaxis(p @ v, 1, 2).reshape(B, T, D)
    h = torch.tanh(torch.cat([x, o @ Wo], dim=-1))
    err = h - y
    return torch.mean(err * err)


def mlp_torch(W1, b1, W2, b2, W3, b3, x, t):
    import torch
    h = torch.relu(x @ W1 + b1)
    h = torch.tanh(h @ W2 + b2)
    z = h @ W3 + b3
    z = z - z.amax(dim=1, keepdim=True)
    logp = z - torch.log(torch.exp(z).sum(dim=1, keepdim=True))
    return -(logp * t).sum() / x.shape[0]


def example_torch(Wq, Wk, Wv, Wo, Ws, x, y):
    import torch
    B, T, D = x.shape
    H = EXAMPLE.N_HEADS
    dh = D // H
    q = (x @ Wq).reshape(B, T, H, dh).permute(0, 2, 1, 3)
    k = (x @ Wk).reshape(B, T, H, dh).permute(0, 2, 3, 1)
    v = torch.swapaxes((x @ Wv).reshape(B, T, H, dh), 1, 2)
    s = (q @ k) * (1.0 / math.sqrt(dh))
    s = s - s.amax(dim=-1, keepdim=True)
    p = torch.exp(s)
    p = p / p.sum(dim=-1, keepdim=True)
    o = torch.moveaxis(p @ v, 1, 2).reshape(B, T, D)
    h = torch.cat([x, o @ Wo], dim=-1)
    err = x + torch.tanh(h @ Ws) - y
    return torch.mean(err * err)


# -- the cases ---------------------------------------------------------------------------------------

def attention_case(B, T, D, seed=0):
    rng = np.random.default_rng(seed)
    w = [rng.standard_normal((D, D)) / math.sqrt(D) for _ in range(4)]
    x = rng.standard_normal((B, T, D))
    y = 0.5 * rng.standard_normal((B, T, 2 * D))
    return (f"attention B{B} T{T} D{D}", attention_step, attention_torch, w, [x, y],
            ["Wq", "Wk", "Wv", "Wo"])


def mlp_case(N, D, H, C, seed=0):
    rng = np.random.default_rng(seed)
    params = [rng.standard_normal((D, H)) / math.sqrt(D), 0.1 * rng.standard_normal(H),
              rng.standard_normal((H, H)) / math.sqrt(H), 0.1 * rng.standard_normal(H),
              rng.standard_normal((H, C)) / math.sqrt(H), 0.1 * rng.standard_normal(C)]
    x = rng.standard_normal((N, D))
    t = np.eye(C)[rng.integers(0, C, N)]
    return (f"MLP N{N} D{D} H{H} C{C}", mlp_step, mlp_torch, params, [x, t],
            ["W1", "b1", "W2", "b2", "W3", "b3"])


def example_case(B, T, D):
    params, teacher = EXAMPLE.init(np, D, dtype="float64")
    x, y = EXAMPLE.data(np, teacher, B, T, D, dtype="float64")
    return (f"examples/gpu_attention.py B{B} T{T} D{D}", EXAMPLE.loss, example_torch,
            list(params), [x, y], ["Wq", "Wk", "Wv", "Wo", "Ws"])


GPU_SIZES = {"attention": [(4, 32, 64), (16, 256, 256), (32, 512, 512)],
             "mlp": [(64, 32, 64, 10), (1024, 784, 1024, 10), (8192, 1024, 4096, 100)],
             "example": [(8, 64, 128)]}
NUMPY_SIZES = {"attention": [(2, 8, 16), (4, 32, 64)],
               "mlp": [(16, 8, 16, 5), (64, 32, 64, 10)],
               "example": [(2, 16, 32)]}


def cases(numpy_mode, quick):
    sizes = NUMPY_SIZES if numpy_mode else GPU_SIZES
    if quick:
        sizes = {k: v[:1] for k, v in sizes.items()}
    return [attention_case(*s) for s in sizes["attention"]] + \
        [mlp_case(*s) for s in sizes["mlp"]] + [example_case(*s) for s in sizes["example"]]


# -- clocks ------------------------------------------------------------------------------------------

def best_ms(fn, sync, warmup, repeat):
    """Best of ``repeat`` single calls (each between two synchronisations), in ms."""
    for _ in range(warmup):
        fn()
    sync()
    best = math.inf
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        sync()
        best = min(best, time.perf_counter() - t0)
    return 1e3 * best


class DeviceClock:
    """Device time per call: calls queued behind long matrix products, timed with events."""

    def __init__(self, lib):
        self.lib = lib
        if lib == "cupy":
            self.busy_a = cupy.ones((8192, 8192), cupy.float32)
            self.event = lambda: cupy.cuda.Event()
            self.sync = cupy.cuda.Device().synchronize
            self.elapsed = cupy.cuda.get_elapsed_time
            self.done = lambda e: e.done
        else:
            import torch
            self.busy_a = torch.ones((8192, 8192), dtype=torch.float32, device="cuda")
            self.event = lambda: torch.cuda.Event(enable_timing=True)
            self.sync = torch.cuda.synchronize
            self.elapsed = lambda a, b: a.elapsed_time(b)
            self.done = lambda e: e.query()
        self.busy_ms = self._time(lambda: self.busy_a @ self.busy_a, 3)

    def _time(self, fn, n):
        fn()
        self.sync()
        e0, e1 = self.event(), self.event()
        e0.record()
        for _ in range(n):
            fn()
        e1.record()
        e1.synchronize()
        return self.elapsed(e0, e1) / n

    def ms(self, fn, wall_ms, n=3):
        """Device ms per call, or None when the queue ran dry (a host synchronisation)."""
        fn()
        self.sync()
        busy = max(2, math.ceil((2.0 * n * wall_ms + 20.0) / self.busy_ms))
        for _ in range(busy):
            self.busy_a @ self.busy_a
        e0, e1 = self.event(), self.event()
        e0.record()
        for _ in range(n):
            fn()
        e1.record()
        ran_dry = self.done(e0)
        e1.synchronize()
        t = self.elapsed(e0, e1) / n
        self.sync()
        return None if ran_dry else t


# -- runners -------------------------------------------------------------------------------------------

def to_numpy(a):
    if cupy is not None and isinstance(a, cupy.ndarray):
        return cupy.asnumpy(a)
    if hasattr(a, "detach"):
        return a.detach().cpu().numpy()
    return np.asarray(a)


def run_s2sad(step, params, data, xp, sync, args, graph=False):
    n = len(params)
    if graph and xp is np:
        return None                 # (graph mode captures CuPy work; NumPy arguments are refused)
    try:
        vg = s2sad.value_and_grad(step, wrt=tuple(range(n)), graph=True) if graph else \
            s2sad.value_and_grad(step, wrt=tuple(range(n)))
    except TypeError:
        return None                 # (no graph mode in this s2sad)
    fn = lambda: vg(*params, *data)                                                # noqa: E731
    value, grads = fn()
    ms = best_ms(fn, sync, args.warmup, args.repeat)
    return {"fn": fn, "ms": ms, "value": float(to_numpy(value)), "sync": sync,
            "grads": [to_numpy(g) for g in grads]}


def run_torch(port, params_np, data_np, device, args):
    import torch
    dt = torch.float32
    ps = [torch.tensor(p, dtype=dt, device=device, requires_grad=True) for p in params_np]
    ds = [torch.tensor(d, dtype=dt, device=device) for d in data_np]

    def fn():
        for p in ps:
            p.grad = None
        loss = port(*ps, *ds)
        loss.backward()
        return loss, [p.grad for p in ps]
    sync = torch.cuda.synchronize if device == "cuda" else (lambda: None)
    value, grads = fn()
    ms = best_ms(fn, sync, args.warmup, args.repeat)
    return {"fn": fn, "ms": ms, "value": float(to_numpy(value)), "sync": sync,
            "grads": [to_numpy(g) for g in grads]}


def run_jax(step, params_np, data_np, args):
    import types
    import jax
    import jax.numpy as jnp
    ns = dict(step.__globals__)
    ns["get_array_module"] = lambda *a: jnp
    f = types.FunctionType(step.__code__, ns, step.__name__)
    if step is EXAMPLE.loss:        # the example's loss calls its attention_block: both see jnp
        ns["attention_block"] = types.FunctionType(EXAMPLE.attention_block.__code__, ns)
    n = len(params_np)
    with jax.default_matmul_precision("float32"):
        g = jax.jit(jax.value_and_grad(f, argnums=tuple(range(n))))
        arrays = [jnp.asarray(a, dtype=jnp.float32) for a in list(params_np) + list(data_np)]
        value, grads = jax.block_until_ready(g(*arrays))
    def fn():
        # The precision is part of jit's cache key: a call outside this context (the interleaved
        # rounds) would run a second trace at the default precision (TF32 on this card).
        with jax.default_matmul_precision("float32"):
            return jax.block_until_ready(g(*arrays))
    ms = best_ms(fn, lambda: None, args.warmup, args.repeat)
    return {"fn": fn, "ms": ms, "value": float(value), "sync": lambda: None,
            "grads": [np.asarray(x) for x in grads]}


def rel_err(a, b):
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    return float(np.linalg.norm(a - b) / max(np.linalg.norm(b), 1e-30))


def _cell(fn, errors, label):
    try:
        return fn()
    except Exception as e:  # noqa: BLE001 (one failing cell must not end the run)
        errors.append(f"{label}: {type(e).__name__}: {e}")
        return "error"


def run_case(case, xp, sync, clocks, peers, args, errors):
    name, step, port, params_np, data_np, pnames = case
    to_dev = (lambda a: xp.asarray(a, dtype=xp.float32))
    params = [to_dev(p) for p in params_np]
    data = [to_dev(d) for d in data_np]
    row = {"name": name, "pnames": pnames}
    primal = lambda: step(*params, *data)                                          # noqa: E731
    row["primal"] = _cell(lambda: best_ms(primal, sync, args.warmup, args.repeat), errors,
                          f"{name} primal")
    row["s2sad"] = _cell(lambda: run_s2sad(step, params, data, xp, sync, args), errors,
                         f"{name} s2sad")
    row["graph"] = _cell(lambda: run_s2sad(step, params, data, xp, sync, args, graph=True),
                         errors, f"{name} s2sad graph=True")
    if "torch" in peers:
        row["torch"] = _cell(lambda: run_torch(port, params_np, data_np,
                                               "cpu" if xp is np else "cuda", args),
                             errors, f"{name} PyTorch")
    if "jax" in peers:
        row["jax"] = _cell(lambda: run_jax(step, params_np, data_np, args), errors, f"{name} JAX")
    for col, lib in (("s2sad", "cupy"), ("graph", "cupy"), ("torch", "torch")):
        r = row.get(col)
        if isinstance(r, dict) and lib in clocks:
            r["device"] = _cell(lambda: clocks[lib].ms(r["fn"], r["ms"]), errors,
                                f"{name} {col} device time")
    if args.interleave:
        row["inter"] = _cell(lambda: interleaved(row, primal, sync, args.interleave), errors,
                             f"{name} interleaved")
    ref = next((c for c in ("torch", "jax") if isinstance(row.get(c), dict)), None)
    row["ref"] = ref
    if ref is not None:
        for col in ("s2sad", "graph", "jax"):
            r = row.get(col)
            if isinstance(r, dict) and col != ref:
                r["errs"] = [rel_err(a, b) for a, b in zip(r["grads"], row[ref]["grads"])]
                r["value_err"] = abs(r["value"] - row[ref]["value"]) / \
                    max(abs(row[ref]["value"]), 1e-30)
    return row


def interleaved(row, primal, sync, rounds):
    """Median and best ms per call of every method, timed in rounds that alternate the methods
    (one call of each per round): on a shared host whose speed drifts, each method then sees the
    same conditions, so the ratios between them hold better than those of best-of runs made one
    method after the other."""
    fns = [("primal", primal, sync)] + [(c, row[c]["fn"], row[c]["sync"])
                                        for c in ("s2sad", "graph", "torch", "jax")
                                        if isinstance(row.get(c), dict)]
    times = {c: [] for c, _, _ in fns}
    for _ in range(rounds):
        for c, fn, sy in fns:
            sy()
            t0 = time.perf_counter()
            fn()
            sy()
            times[c].append(1e3 * (time.perf_counter() - t0))
    return {c: (float(np.median(t)), min(t)) for c, t in times.items()}


# -- output --------------------------------------------------------------------------------------------

def _ms(r):
    if r is None:
        return "n/a"
    if r == "error":
        return "error"
    if isinstance(r, dict):
        r = r["ms"]
    if r is None:
        return "n/a"
    return f"{r:.3g}" if r < 100 else f"{r:.0f}"


def _dev(r):
    if not isinstance(r, dict) or "device" not in r:
        return "n/a"
    d = r["device"]
    return "sync" if d is None else "error" if d == "error" else _ms(d)


def table(header, rows, markdown):
    if markdown:
        out = ["| " + " | ".join(header) + " |",
               "|---|" + "---:|" * (len(header) - 1)]
        out += ["| " + " | ".join(r) + " |" for r in rows]
        return "\n".join(out)
    w = [max(len(str(x)) for x in col) for col in zip(header, *rows)]
    fmt = lambda r: "  ".join(str(x).ljust(n) if i == 0 else str(x).rjust(n)   # noqa: E731
                              for i, (x, n) in enumerate(zip(r, w)))
    return "\n".join([fmt(header), fmt(["-" * n for n in w])] + [fmt(r) for r in rows])


def report(results, peers, numpy_mode, markdown):
    primal = "primal (NumPy)" if numpy_mode else "primal (CuPy)"
    head = ["step", primal, "s2sad", "s2sad graph=True"] + \
        (["PyTorch eager"] if "torch" in peers else []) + (["JAX jit"] if "jax" in peers else [])
    rows = []
    for r in results:
        rows.append([r["name"], _ms(r["primal"]), _ms(r["s2sad"]), _ms(r["graph"])] +
                    ([_ms(r.get("torch"))] if "torch" in peers else []) +
                    ([_ms(r.get("jax"))] if "jax" in peers else []))
    print("ms per call (value and gradient; primal: the value alone), best of the repeats")
    print(table(head, rows, markdown))
    if not numpy_mode:
        print()
        print("device ms per call (calls queued behind matrix products, CUDA events; "
              "'sync': the call waited for the device)")
        rows = [[r["name"], _dev(r["s2sad"]), _dev(r["graph"]), _dev(r.get("torch"))]
                for r in results]
        print(table(["step", "s2sad", "s2sad graph=True", "PyTorch eager"], rows, markdown))
    if any(isinstance(r.get("inter"), dict) for r in results):
        print()
        cols = [c for c in ("primal", "s2sad", "graph", "torch", "jax")
                if any(isinstance(r.get("inter"), dict) and c in r["inter"] for r in results)]
        names = {"primal": primal, "s2sad": "s2sad", "graph": "s2sad graph=True",
                 "torch": "PyTorch eager", "jax": "JAX jit"}
        ratio = "torch" in cols
        print("interleaved: median ms per call over rounds that alternate the methods (best in "
              "brackets)" + ("; last column: s2sad plain / PyTorch eager, medians" if ratio else ""))
        rows = []
        for r in results:
            it = r.get("inter")
            if not isinstance(it, dict):
                continue
            cells = [f"{_ms(it[c][0])} ({_ms(it[c][1])})" if c in it else "n/a" for c in cols]
            if ratio:
                cells.append(f"{it['s2sad'][0] / it['torch'][0]:.2f}"
                             if "s2sad" in it and "torch" in it else "n/a")
            rows.append([r["name"]] + cells)
        print(table(["step"] + [names[c] for c in cols] + (["plain / PyTorch"] if ratio else []),
                    rows, markdown))
    print()
    print("gradients: relative error ||g - g_ref|| / ||g_ref|| per parameter (float32); "
          "value: relative difference")
    rows = []
    for r in results:
        for col, label in (("s2sad", "s2sad"), ("graph", "s2sad graph=True"), ("jax", "JAX jit")):
            x = r.get(col)
            if isinstance(x, dict) and "errs" in x:
                errs = ", ".join(f"{n} {e:.1e}" for n, e in zip(r["pnames"], x["errs"]))
                rows.append([r["name"], f"{label} vs {r['ref']}", f"{x['value_err']:.1e}", errs])
    if rows:
        print(table(["step", "compared", "value", "parameters"], rows, markdown))
    else:
        print("(no reference: neither PyTorch nor JAX ran)")


def header(xp, peers, args):
    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    if xp is np:
        card = f"CPU ({platform.processor() or platform.machine()}), NumPy arrays"
    else:
        card = cupy.cuda.runtime.getDeviceProperties(cupy.cuda.Device().id)["name"].decode()
    vers = [f"Python {platform.python_version()}", f"NumPy {np.__version__}",
            f"s2sad {getattr(s2sad, '__version__', '?')}"]
    if xp is not np:
        vers.append(f"CuPy {cupy.__version__}")
    for p in peers:
        try:
            vers.append(f"{'PyTorch' if p == 'torch' else 'JAX'} {__import__(p).__version__}")
        except Exception:  # noqa: BLE001
            vers.append(f"{p}: not importable")
    print(f"# gpu_step.py, {now}, {card}")
    print(", ".join(vers))
    print(f"float32; warm-up {args.warmup}, best of {args.repeat}; "
          "JAX: jax.default_matmul_precision('float32') (full float32 matmuls); "
          "PyTorch: TF32 off (torch.backends.cuda.matmul.allow_tf32 = False); CuPy: TF32 off "
          f"(CUPY_TF32={os.environ.get('CUPY_TF32', 'unset')})")
    print()


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--numpy", action="store_true", help="NumPy arrays on the CPU, small sizes")
    ap.add_argument("--quick", action="store_true", help="the smallest size of each step, few repeats")
    ap.add_argument("--markdown", action="store_true", help="tables in Markdown")
    ap.add_argument("--repeat", type=int, default=None, help="timed calls per cell (best is kept)")
    ap.add_argument("--warmup", type=int, default=None)
    ap.add_argument("--peers", default="torch,jax", help="comma list of torch, jax (or none)")
    ap.add_argument("--only", default="", help="run the steps whose name contains this text")
    ap.add_argument("--interleave", type=int, default=0,
                    help="also time this many rounds alternating the methods (median ratios)")
    args = ap.parse_args(argv)
    args.repeat = args.repeat or (3 if args.quick else 20)
    args.warmup = args.warmup or (1 if args.quick else 3)
    peers = [p for p in args.peers.split(",") if p in ("torch", "jax")]
    if args.numpy:
        os.environ.setdefault("JAX_PLATFORMS", "cpu")
    avail = []
    for p in peers:
        try:
            __import__(p)
            avail.append(p)
        except Exception:  # noqa: BLE001
            print(f"({p} not importable: its column is left out)")
    peers = avail
    if args.numpy:
        xp, sync = np, (lambda: None)
    else:
        if cupy is None or not cupy.is_available():
            sys.exit("CuPy or a GPU is not available: run with --numpy for the CPU smoke run")
        xp, sync = cupy, cupy.cuda.Device().synchronize
    if "torch" in peers:
        import torch
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
    header(xp, peers, args)
    sys.stdout.flush()
    clocks = {}
    errors = []
    if xp is not np:
        clocks["cupy"] = DeviceClock("cupy")
        if "torch" in peers:
            clocks["torch"] = DeviceClock("torch")
    results = []
    for case in cases(args.numpy, args.quick):
        if args.only and args.only not in case[0]:
            continue
        t0 = time.perf_counter()
        results.append(run_case(case, xp, sync, clocks, peers, args, errors))
        print(f"  ran {case[0]} in {time.perf_counter() - t0:.1f} s", flush=True)
    report(results, peers, args.numpy, args.markdown)
    if errors:
        print()
        print("errors:")
        for e in errors:
            print("  " + e.splitlines()[0][:300])
    return results


if __name__ == "__main__":
    main()
