"""The bounded caches of the kernels' launch module (device tables, launch plans) under threads: two
threads evicting at once used to pop the same oldest key (KeyError) or iterate the dict while
another thread changed it (RuntimeError).  ``_Cache`` stores and evicts under its own lock and
reads without one."""
import sys
import threading

import pytest

from s2sad.kernels import launch


@pytest.fixture
def small_cache(monkeypatch):
    monkeypatch.setitem(launch.CONFIG, "table_cache", 4)
    return launch._Cache()


def _hammer(cache, n_threads=8, n_keys=8000):
    errors = []
    start = threading.Barrier(n_threads)

    def work(t):
        try:
            start.wait()
            for k in range(n_keys):
                key = (t, k % 50)
                v = cache.get(key)
                if v is None:
                    v = cache.put(key, (t, k))
                assert v[0] == t
        except BaseException as e:  # noqa: BLE001
            errors.append(e)
    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)        # switch threads as often as possible
    try:
        threads = [threading.Thread(target=work, args=(t,)) for t in range(n_threads)]
        for th in threads:
            th.start()
        for th in threads:
            th.join()
    finally:
        sys.setswitchinterval(old)
    return errors


def test_concurrent_puts_never_fail_and_stay_bounded(small_cache):
    errors = _hammer(small_cache)
    assert errors == []
    assert 1 <= len(small_cache) <= 4


def test_first_stored_value_wins(small_cache):
    assert small_cache.put("k", 1) == 1
    assert small_cache.put("k", 2) == 1          # another thread's value is kept
    assert small_cache.get("k") == 1 and "k" in small_cache


def test_oldest_entry_is_evicted_first(small_cache):
    for k in range(6):
        small_cache.put(k, k)
    assert len(small_cache) == 4
    assert small_cache.get(0) is None and small_cache.get(1) is None
    assert [small_cache.get(k) for k in range(2, 6)] == [2, 3, 4, 5]
    small_cache.clear()
    assert len(small_cache) == 0


def test_module_caches_are_thread_safe_caches():
    assert isinstance(launch._tables, launch._Cache)
    assert isinstance(launch._plans, launch._Cache)


def _gpu():
    import os
    try:
        import cupy as cp
        ok = bool(cp.is_available()) and os.environ.get("NUMBA_ENABLE_CUDASIM") == "0"
    except Exception:  # noqa: BLE001
        return None
    return cp if ok else None


@pytest.mark.gpu
def test_device_tables_and_plans_from_threads_on_the_gpu(monkeypatch):
    """Concat/permute adjoints of many layouts from 8 threads with a cache of 4: device tables
    and launch plans are evicted while other threads fill them; the results stay right."""
    cp = _gpu()
    if cp is None:
        pytest.skip("needs CuPy, a GPU and NUMBA_ENABLE_CUDASIM=0")
    import numpy as np
    from s2sad.kernels import concat_adjoint, permute_adjoint
    monkeypatch.setitem(launch.CONFIG, "table_cache", 4)
    errors = []
    start = threading.Barrier(8)

    def work(t):
        try:
            rng = np.random.default_rng(t)
            start.wait()
            for k in range(40):
                n = 3 + (t + k) % 7
                xs = [rng.standard_normal((n, 2 + j)) for j in range(3)]
                g = rng.standard_normal((n, sum(x.shape[1] for x in xs)))
                got = concat_adjoint(cp.asarray(g), [cp.asarray(x) for x in xs], 1)
                for a, b in zip(got, concat_adjoint(g, xs, 1)):
                    np.testing.assert_allclose(cp.asnumpy(a), b, rtol=1e-12)
                gp = rng.standard_normal((4, n, 3))         # y = x.transpose(2, 0, 1)
                a = permute_adjoint(cp.asarray(gp), (2, 0, 1))
                np.testing.assert_allclose(cp.asnumpy(a), permute_adjoint(gp, (2, 0, 1)),
                                           rtol=1e-12)
            cp.cuda.get_current_stream().synchronize()
        except BaseException as e:  # noqa: BLE001
            errors.append(e)
    threads = [threading.Thread(target=work, args=(t,)) for t in range(8)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert errors == []
    assert len(launch._tables) <= 4 and len(launch._plans) <= 4
