"""The C heap the arrays of a derivative come from: glibc's ``malloc`` on Linux.

A derivative allocates the same temporaries on every call, and their total is a few times the
largest of them (the tape, the adjoints).  glibc serves an allocation at or above its mmap
threshold (128 KiB at start) with pages of its own, and gives the free top of its heap back to the
system once it exceeds the trim threshold (twice the mmap threshold).  Both thresholds rise only
when the program frees an mmap-served block larger than the mmap threshold (glibc's dynamic
threshold, up to 32 MiB on 64-bit machines), so a process that has not happened to free a large
block keeps them low, and a gradient whose working set is a few arrays of 128 KiB to a few MiB
then takes fresh pages from the kernel (a page fault and a zeroed page each) for most of its
working set on every call.  Whether a process is in that state depends on what it happened to
free before: loading a derivative from the disk cache frees less than building it, and most
processes that loaded one were (``benchmarks/heap.py``, dev machine: ``simple_mlp``'s gradient
4.6x its primal in 4 processes of 5, 184 page faults per call, against 2.95x; the log-normal
model ``turing_broadcast``, 100,000 observations, 3.65x against 1.89x, 1531 faults per call).

:func:`settle` puts glibc, once per process, where its own rule would put it after a program
freed a 32 MiB block: it allocates and frees one such block, which raises the mmap threshold to
32 MiB and the trim threshold to 64 MiB; up to 64 MiB of freed memory then stays in the heap
instead of going back to the system.  Nothing else changes: glibc's thresholds still rise on their
own, a user's ``MALLOC_MMAP_THRESHOLD_`` / ``MALLOC_TRIM_THRESHOLD_`` (or ``GLIBC_TUNABLES``)
settings turn the rule off and so this too, another C library or an allocator loaded with
``LD_PRELOAD`` is left alone, and ``S2SAD_MALLOC=0`` turns it off.
"""
import os

_done = False


def _glibc():
    """Whether this process runs on glibc (``os.confstr`` names it there only)."""
    try:
        return (os.confstr("CS_GNU_LIBC_VERSION") or "").startswith("glibc")
    except (ValueError, OSError, AttributeError):
        return False


def enabled():
    """Whether :func:`settle` does anything here: glibc, and ``S2SAD_MALLOC`` is not 0."""
    if os.environ.get("S2SAD_MALLOC", "1").strip().lower() in ("0", "false", "off", "no"):
        return False
    return _glibc()


def settle():
    """Raise glibc's mmap and trim thresholds to 32 and 64 MiB, once per process (see above); the
    derivative cache calls it before it builds or loads the first derivative."""
    global _done
    if _done:
        return
    _done = True
    if not enabled():
        return
    import ctypes
    try:
        libc = ctypes.CDLL(None)
        malloc, free = libc.malloc, libc.free
    except (OSError, AttributeError):
        return
    malloc.restype, malloc.argtypes = ctypes.c_void_p, [ctypes.c_size_t]
    free.restype, free.argtypes = None, [ctypes.c_void_p]
    # glibc's dynamic threshold follows a freed block of at most 4 Mi longs (32 MiB), counting
    # its header and rounded to pages: ask for 64 KiB less.  Its pages are never touched.
    p = malloc(4 * 1024 * 1024 * ctypes.sizeof(ctypes.c_long) - 65536)
    if p:
        free(p)
