"""A built derivative (the pipeline of ``build.py`` makes it; the disk cache reads one back
without importing that pipeline)."""
_GONE = object()


class Derivative:
    """A built derivative: the generated module, its sweeps, and what was decided at each site."""

    def __init__(self, fn_ir, module, fwd, bwd, wrt, sites, mode="reverse"):
        self.ir = fn_ir
        self.module = module
        self.fwd = fwd
        self.bwd = bwd
        self.wrt = wrt
        self.sites = sites
        self.mode = mode
        # the disk cache's file of this module (s2sad/diskcache.py), None when it is not on disk
        self.cache_path = None
        # jit=True: (the namespace before codegen/jit.bind_namespace, what it returned), which
        # the disk cache records to bind a module it reads back the same way
        self.jit_binding = None
        # mode "mut" (a method that updates its object): the names of the attributes of the
        # object it may change, None when that is not known (classify/updates.py)
        self.self_writes = None

    @property
    def source(self):
        return self.module.source

    def fresh(self):
        """False once a module global the derivative read at build time has been rebound."""
        glb, refs = getattr(self.ir, "global_refs", (None, ()))
        for name, value in refs:
            if glb.get(name, _GONE) is not value:
                return False
        return True
