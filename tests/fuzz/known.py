"""Constructs the CI fuzz test (test_fuzz.py) leaves out because s2sad is known to get them wrong
today.  Each entry is a tag of :mod:`tests.fuzz.grammar`; its shrunk programs are kept in
test_regressions.py, marked xfail.  Remove an entry when those pass.
"""
KNOWN_BROKEN = frozenset({
    # for-loop targets named t, i, k like the targets of comprehensions in nested defs: forward
    # mode crashes (test_comprehension_in_closure_binds_name_*)
    "loop_var_reuse",
})
