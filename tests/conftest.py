import os

# Kernel tests run Numba's CUDA simulator on CPU unless a GPU run sets NUMBA_ENABLE_CUDASIM=0.
# Must happen before numba is imported anywhere.
os.environ.setdefault("NUMBA_ENABLE_CUDASIM", "1")


def pytest_configure(config):
    config.addinivalue_line("markers", "gpu: needs CuPy and a CUDA GPU (skipped otherwise)")
