"""s2sad's log: the standard-library logger ``"s2sad"``.

``S2SAD_LOG=debug`` (or ``info``, ``warning``...) in the environment sets its level when s2sad is
imported and, unless the logger already has a handler, prints its records to standard error.
At the debug level it tells the cache's decisions (a derivative found, or built and how long it
took) and how each call site of a built derivative was classified.  The calls cost one level
check when the level is off (:func:`debugging`).
"""
import os
import sys

_DEBUG = 10             # logging.DEBUG


def __getattr__(name):
    """``log``: the logger, made on first use (``import s2sad`` does not import ``logging``)."""
    if name == "log":
        return _logger()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _logger():
    import logging
    log = globals()["log"] = logging.getLogger("s2sad")
    return log


def configure(level=None):
    """Set the logger's level from ``level`` or ``$S2SAD_LOG`` (nothing when neither is set);
    add a handler to standard error when the logger has none."""
    level = level or os.environ.get("S2SAD_LOG")
    if not level:
        return
    import logging
    log = _logger()
    value = logging.getLevelName(str(level).upper())
    if not isinstance(value, int):
        log.warning("S2SAD_LOG=%s is not a logging level (debug, info, warning, error)", level)
        return
    log.setLevel(value)
    if not log.handlers:
        handler = logging.StreamHandler()
        handler.setFormatter(logging.Formatter("s2sad %(levelname)s: %(message)s"))
        log.addHandler(handler)


def debugging():
    """True when debug records are wanted (one level check; False while nothing has imported
    ``logging``, so nothing can have asked for them)."""
    if "logging" not in sys.modules:
        return False
    return _logger().isEnabledFor(_DEBUG)


def label(code):
    """``name (file:line)`` of a code object, for log lines."""
    return f"{getattr(code, 'co_qualname', code.co_name)} ({code.co_filename}:{code.co_firstlineno})"


def sites(d):
    """One debug record per call site of a built derivative: where, callee, class, choice."""
    for origin, callee, cls, chosen in getattr(d, "sites", ()):
        _logger().debug("  %s  %s: %s (%s)", origin.short(), callee, cls, chosen)


configure()
