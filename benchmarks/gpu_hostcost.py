"""Host time of one GPU operation, by route: what a host-bound (small) step pays per launch.

A small training step on the GPU is bound by the host: its kernels take 2-5 µs of device time
each, and issuing one costs more than that.  This prints, for small float32 arrays, the host time
of one call of each way s2sad or a peer can issue an operation: CuPy's ufuncs, reductions and
``matmul``, a ``cupy.ElementwiseKernel`` and a ``cupy.RawKernel`` launch, ``cupy.empty``, s2sad's
fused elementwise route (:class:`s2sad.kernels.elementwise.Fused`; ``Group`` for a run of
statements) and direct cuBLAS products (:func:`s2sad.kernels.gemm._gemm`), and PyTorch's eager
operations.
Each figure is the best of several repeats of many calls issued back to back, divided by the
number of calls (the device keeps up: its work per call is smaller than the host's).

    PYTHONPATH=$PWD:$PWD/build/gpu_deps NUMBA_ENABLE_CUDASIM=0 python benchmarks/gpu_hostcost.py

Needs CuPy and an NVIDIA GPU (PyTorch optional).  No timing is asserted anywhere.
"""
import argparse
import ast
import os
import sys
import time

_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(_HERE))

import numpy as np  # noqa: E402


def per_call(fn, sync, calls=2000, repeat=5):
    """Best-of-``repeat`` host µs per call of ``fn`` over ``calls`` back-to-back calls."""
    for _ in range(50):
        fn()
    sync()
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        for _ in range(calls):
            fn()
        sync()
        best = min(best, (time.perf_counter() - t0) / calls * 1e6)
    return best


def rows(shape, calls):
    import cupy
    from s2sad.kernels import elementwise, gemm
    rng = np.random.default_rng(0)
    a = cupy.asarray(rng.standard_normal(shape), dtype=cupy.float32)
    b = cupy.asarray(rng.standard_normal(shape), dtype=cupy.float32)
    w = cupy.asarray(rng.standard_normal((shape[-1], shape[-1])), dtype=cupy.float32)
    a2 = a.reshape(-1, shape[-1])
    sync = cupy.cuda.get_current_stream().synchronize
    n = a.size

    ek = cupy.ElementwiseKernel("float32 x, float32 y", "float32 z", "z = x * y + x",
                                "hostcost_ek")
    raw = cupy.RawKernel(r'''
extern "C" __global__ void hostcost_raw(const float* x, const float* y, float* z, long long n) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) z[i] = x[i] * y[i] + x[i];
}''', "hostcost_raw")
    out = cupy.empty_like(a)
    grid = ((n + 255) // 256,)
    n64 = np.int64(n)

    def fused(text, names):
        node = ast.parse(text, mode="eval").body
        ns = {"cupy": cupy}
        got = elementwise.compile_expr(node, lambda e: eval(ast.unparse(e), ns)
                                       if not (isinstance(e, ast.Name) and e.id in names)
                                       else None, lambda x: x)
        cexpr, leaves, nops = got
        fb = eval("lambda " + ", ".join(leaves) + ": " + text, ns)
        return elementwise.Fused(cexpr, len(leaves), fb, text, nops).entry()

    f1 = fused("a * b", {"a", "b"})
    f2 = fused("a * b + a", {"a", "b"})
    f3 = fused("cupy.tanh(a * b + a) - b", {"a", "b"})

    def run(src):                       # a run of statements as one Group (graphs._Runs)
        import textwrap
        from s2sad import graphs
        runs = graphs._Runs({"cupy": cupy}, "<hostcost>")
        runs.visit(ast.parse(textwrap.dedent(src)))
        (g,) = runs.groups.values()
        return g.entry()

    g2 = run("def f(a, b):\n    c = a + b\n    h = cupy.maximum(c, 0.0)\n")
    g3 = run("def f(a, b):\n    h = cupy.tanh(a)\n    e = h - b\n    e2 = e * e\n")
    got = [
        ("cupy: a + b", lambda: a + b),
        ("cupy: cupy.exp(a)", lambda: cupy.exp(a)),
        ("cupy: a * b + a (2 launches)", lambda: a * b + a),
        ("cupy: cupy.empty(shape)", lambda: cupy.empty(shape, cupy.float32)),
        ("cupy: a.sum(axis=-1, keepdims=True)", lambda: a.sum(axis=-1, keepdims=True)),
        ("cupy: a.max(axis=-1, keepdims=True)", lambda: a.max(axis=-1, keepdims=True)),
        ("cupy: a @ w", lambda: a @ w),
        ("cupy: ElementwiseKernel x*y+x", lambda: ek(a, b)),
        ("cupy: RawKernel x*y+x (out given)", lambda: raw(grid, (256,), (a, b, out, n64))),
        ("cupy: RawKernel + cupy.empty", lambda: raw(grid, (256,), (a, b, cupy.empty(shape, cupy.float32), n64))),
        ("s2sad Fused: a * b", lambda: f1(a, b)),
        ("s2sad Fused: a * b + a", lambda: f2(a, b)),
        ("s2sad Fused: tanh(a * b + a) - b", lambda: f3(a, b)),
        ("cupy: c = a + b; h = maximum(c, 0) (2 launches)", lambda: cupy.maximum(a + b, 0.0)),
        ("s2sad Group: c = a + b; h = maximum(c, 0) (2 outputs)", lambda: g2(a, b)),
        ("cupy: h = tanh(a); e = h - b; e * e (3 launches)", lambda: (lambda e: e * e)(cupy.tanh(a) - b)),
        ("s2sad Group: h = tanh(a); e = h - b; e * e (3 outputs)", lambda: g3(a, b)),
        ("s2sad gemm._gemm: a @ w (direct cuBLAS)", lambda: gemm._gemm(a, w)),
        ("s2sad gemm.matmul: a @ w (plain mode's route)", lambda: gemm.matmul(a, w)),
        ("cupy: 2-D a2 @ w", lambda: a2 @ w),
        ("s2sad gemm._gemm: 2-D a2 @ w", lambda: gemm._gemm(a2, w)),
        ("cupy: 2-D a2.T @ a2", lambda: a2.T @ a2),
        ("s2sad gemm._gemm: 2-D a2.T @ a2", lambda: gemm._gemm(a2.T, a2)),
        ("cupy: cupy.ndarray(shape, dtype)", lambda: cupy.ndarray(shape, cupy.float32)),
    ]
    if len(shape) == 3 and shape[-1] % 4 == 0:     # heads: (B, T, 4, d) seen as (B, 4, T, d)
        B, T, D = shape
        q = a.reshape(B, T, 4, D // 4).transpose(0, 2, 1, 3)
        kt = b.reshape(B, T, 4, D // 4).transpose(0, 2, 3, 1)
        got += [("cupy: heads q @ k^T", lambda: q @ kt),
                ("s2sad gemm.matmul: heads q @ k^T (pointer arrays)", lambda: gemm.matmul(q, kt))]
    res = [(name, per_call(fn, sync, calls)) for name, fn in got]
    try:
        import torch
    except ImportError:
        return res
    ta = torch.as_tensor(a, device="cuda")
    tb = torch.as_tensor(b, device="cuda")
    tw = torch.as_tensor(w, device="cuda")
    tsync = torch.cuda.synchronize
    tr = [
        ("torch: a + b", lambda: ta + tb),
        ("torch: torch.exp(a)", lambda: torch.exp(ta)),
        ("torch: a.sum(-1, keepdim=True)", lambda: ta.sum(-1, keepdim=True)),
        ("torch: a @ w", lambda: ta @ tw),
    ]
    tp = tw.clone().requires_grad_(True)

    def tstep():
        h = torch.tanh(ta @ tp + tb)
        (h * h).mean().backward()
        tp.grad = None
    tr.append(("torch: tanh(a @ w + b), (h*h).mean(), backward: whole", tstep))
    return res + [(name, per_call(fn, tsync, calls)) for name, fn in tr]


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--shape", default="4,32,64")
    p.add_argument("--calls", type=int, default=2000)
    args = p.parse_args(argv)
    shape = tuple(int(s) for s in args.shape.split(","))
    print(f"host µs per call, float32 arrays of shape {shape}, best of 5 x {args.calls} calls")
    print("| route | µs per call |\n|---|---:|")
    for name, us in rows(shape, args.calls):
        print(f"| {name} | {us:.2f} |")


if __name__ == "__main__":
    main()
