"""Constructs the CI fuzz test (test_fuzz.py) leaves out because s2sad is known to get them wrong
today.  Each entry is a tag of :mod:`tests.fuzz.grammar`; its shrunk programs are kept in
test_regressions.py, marked xfail.  Remove an entry when those pass.
"""
KNOWN_BROKEN = frozenset({
})
