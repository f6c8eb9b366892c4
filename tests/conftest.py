import os
import sys

# `from tests.jit.compare import ...` in test modules: the repository root on the path, however
# pytest is invoked (`pytest` puts only the test files' folders there, `python -m pytest` the cwd)
_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if _ROOT not in sys.path:
    sys.path.insert(0, _ROOT)

# Kernel tests run Numba's CUDA simulator on CPU unless a GPU run sets NUMBA_ENABLE_CUDASIM=0.
# Must happen before numba is imported anywhere.
os.environ.setdefault("NUMBA_ENABLE_CUDASIM", "1")
# The suite compiles many small numba functions (tests/jit): LLVM's cheapest optimisation level
# compiles them about a third faster; without fast-math the numbers are the same IEEE arithmetic.
os.environ.setdefault("NUMBA_OPT", "0")


def pytest_configure(config):
    # the disk cache of derivatives: a private folder for this run (the suite exercises it; no
    # entry of an earlier run or of the user's own cache is read)
    if "S2SAD_CACHE_DIR" not in os.environ:
        import tempfile
        config._s2sad_cache_dir = os.environ["S2SAD_CACHE_DIR"] = tempfile.mkdtemp(
            prefix="s2sad-test-cache-")
    config.addinivalue_line("markers", "gpu: needs CuPy and a CUDA GPU (skipped otherwise)")


def pytest_unconfigure(config):
    made = getattr(config, "_s2sad_cache_dir", None)
    if made:
        import shutil
        shutil.rmtree(made, ignore_errors=True)
        os.environ.pop("S2SAD_CACHE_DIR", None)
