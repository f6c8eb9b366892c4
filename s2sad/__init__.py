"""s2sad: source-to-source automatic differentiation for Python (NumPy, CuPy, plain floats)."""
from .errors import (S2SADError, UnsupportedSyntaxError, SourceUnavailableError, OpaqueCalleeError,
                     NonScalarOutputError, WrtError, RuleError, DeviceMismatchError)

__version__ = "0.1.0"
