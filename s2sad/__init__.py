"""s2sad: source-to-source automatic differentiation for Python (NumPy, CuPy, plain floats).

    @s2sad.differentiate
    def loss(W, x, y): ...
    value, gW = loss.value_and_grad(W, x, y)
    print(loss.adjoint_source())
"""
from .errors import (S2SADError, UnsupportedSyntaxError, SourceUnavailableError, OpaqueCalleeError,
                     NonScalarOutputError, WrtError, RuleError, DeviceMismatchError,
                     StaleSourceError, ArgumentError)
from .api import differentiate, grad, value_and_grad, vjp
from .transforms import jvp, jacfwd, jacrev, jacobian, hessian, hvp
from .rules.registry import defrule, defzero, defmethod

from ._version import __version__  # noqa: E402

__all__ = ["differentiate", "grad", "value_and_grad", "vjp", "jvp", "jacfwd", "jacrev", "jacobian",
           "hessian", "hvp", "defrule", "defzero", "defmethod",
           "S2SADError", "UnsupportedSyntaxError", "SourceUnavailableError", "OpaqueCalleeError",
           "NonScalarOutputError", "WrtError", "RuleError", "DeviceMismatchError",
           "StaleSourceError", "ArgumentError"]
