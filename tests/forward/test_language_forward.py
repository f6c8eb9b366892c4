"""Forward mode on language constructs: late-binding closures and defaults, objects (constructors,
dataclasses, properties, classmethods, callable objects), partials, zip/enumerate/reversed/sorted/
min/max, dict and list methods that change their receiver, complex scalars.  Tangents against
central differences; against reverse mode (<J v, w> = <v, J^T w>) where reverse mode handles the
program."""
import numpy as np
import pytest

import lang_programs as L
from fwdcheck import check_consistency
from s2sad.testing import check_grads

R = np.random.default_rng(0)

CASES = [
    ("defaults_late", L.defaults_late, (0.7, 1.3), (0, 1), True),
    ("escaping", L.escaping, (0.7, 1.3), (0, 1), True),
    ("star_entry", L.star_entry, (0.7, 1.3, -0.4), (0, 1, 2), True),
    ("dataclass", L.dc_prog, (0.7, 1.3), (0, 1), True),
    ("objects", L.obj_prog, (R.standard_normal(3), 1.3), (0, 1), True),
    ("partial", L.partial_prog, (R.standard_normal(3), 1.3), (0, 1), True),
    ("zip_enum", L.zip_enum, ([0.3, -0.5, 0.9], [1.1, 0.2, -0.7]), (0, 1), True),
    ("walrus", L.walrus_with, (0.7,), 0, True),
    ("complex", L.complex_prog, (0.7,), 0, True),
    ("iter", L.iter_prog, ([0.3, -0.5, 0.9],), 0, True),
    ("list_of_arrays", L.list_of_arrays, (R.standard_normal(3),), 0, True),
    # reverse mode gives wrong numbers on these today (see the report): forward vs differences only
    ("dict methods", L.dict_prog, (0.7,), 0, False),
    ("list.sort", L.m1, (0.7,), 0, False),
    ("dict.setdefault", L.m2, (0.7,), 0, False),
    ("extend/remove", L.m3, (0.7,), 0, False),
    ("dict.pop/popitem", L.m4, (0.7,), 0, False),
    ("list.reverse", L.m5, (0.7,), 0, False),
    ("dict.update pairs", L.m6, (0.7,), 0, False),
]


@pytest.mark.parametrize("name, f, args, wrt, reverse_ok", CASES, ids=[c[0] for c in CASES])
def test_forward_language(name, f, args, wrt, reverse_ok):
    check_grads(f, args, wrt, modes=("fwd",))
    if reverse_ok:
        check_consistency(f, args, wrt)


def test_write_into_an_argument_is_refused_in_forward_mode_too():
    import s2sad
    from s2sad import transforms as tr
    with pytest.raises(s2sad.S2SADError, match="writes into arguments"):
        tr.jvp(L.outer_fill, (1.5,), (1.0,))



def test_method_updating_its_object_in_forward_mode():
    # a method that writes into self (on an object made inside the function) is followed in
    # both modes: the updated object is the method's second output
    check_grads(L.outer_acc, (1.5,), 0, modes=("rev", "fwd"))
    check_consistency(L.outer_acc, (1.5,), 0)


def slogdet_prog(a):
    s, l = np.linalg.slogdet(a)
    return l * 2.0 + s


def test_slogdet_forward():
    a = np.random.default_rng(7).standard_normal((3, 3)) + 3 * np.eye(3)
    check_grads(slogdet_prog, (a,), 0, modes=("rev", "fwd"))
