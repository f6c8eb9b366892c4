"""s2sad's version (one place: the package, the disk cache's keys)."""
__version__ = "0.1.0"
