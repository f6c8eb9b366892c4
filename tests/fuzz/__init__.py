"""A fuzzer for the language s2sad differentiates: random programs, checked in both modes
against central differences.  See README.md; run ``python -m tests.fuzz --help``."""
