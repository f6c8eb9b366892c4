"""A generator of random, well-formed Python programs ``def f(x, y):`` to differentiate.

``x`` is a float64 array of length 3 and ``y`` a float; ``f`` returns a float.  Programs are built
from a small grammar with *typed holes*: every expression is generated for a kind of value

    s  float scalar          a  float array of length 3     l  list of floats (length 3, or unknown)
    d  dict with keys a,b,c  o  object (Box, Bag, Pt)       f  callable float -> float
    i  iterator / dict view  n  int index in range(3)       k  one of the keys 'a', 'b', 'c'

so that programs are valid and nearly always run.  The grammar covers the constructs where s2sad's
wrong answers lived (issue 10): iterators consumed by builtins (zip, enumerate, map, filter,
reversed, iter, sorted/min/max with keys, itemgetter), dict views, containers built in branches and
loops, comprehensions, closures and lambdas, classes with attribute writes (direct, setattr,
__dict__, vars), NumPy index tricks (np.r_, np.c_), early exits and in-place writes.

Every choice goes through a :class:`Chooser`, so the same grammar is driven by Hypothesis (for
shrinking, :func:`programs`), by a seeded ``random.Random`` (the command line), or by replaying a
recorded list of choices (:mod:`tests.fuzz.shrink`).  Option 0 of every choice is the simplest, so
choices that shrink toward 0 give smaller programs.

Each production carries a *tag* (a construct name).  A program records the tags it uses (for the
per-construct breakdown), and ``exclude`` removes tagged productions from the grammar (the CI test
excludes constructs that are known to be broken and not yet fixed).
"""
import itertools
import random
import re

N = 3
KEYS = ("a", "b", "c")
CONSTS = ("0.5", "-0.3", "1.2", "0.7", "-1.1", "0.25", "2.0")
THRESH = ("0.0", "0.3", "-0.4", "0.8")

# every tag the grammar can emit (for --exclude and the breakdown)
TAGS = frozenset("""
np_ufunc math abs minmax ternary reduce_array float_conv tolist item complex
zip enumerate map map2 filter reversed iter next sorted sorted_key minmax_key itemgetter dict_view
dict_get genexpr listcomp dictcomp starmap reduce accumulate iter_var iter_reuse
dict_ctor dict_copy list_slice list_concat np_array_of_list deepcopy
branch branch_container loop loop_build_list loop_build_dict loop_fill loop_setattr while
break continue early_return inner_early_return
lambda closure helper partial callable_obj heapq bound_method ufunc_value call key_closure comp_shadow reduce_iter alias_arg closure_iter lazy_mutation loop_var_reuse
class class_kw dataclass attr_write attr_overwrite attr_augwrite setattr getattr __dict__ vars method_mutate
method copy dc_replace
view float_keys r_ r_range r_directive c_ frompyfunc vectorize where np_sort np_maximum concat stack cumsum roll
inplace_array inplace_list inplace_dict list_method alias argwrite helper_argwrite
""".split())


# -- choosers ----------------------------------------------------------------------------------
class Chooser:
    """Source of choices.  ``int(lo, hi)`` (inclusive) is the only primitive."""

    def int(self, lo, hi):
        raise NotImplementedError

    def index(self, weights):
        """An index into ``weights`` with those relative weights (0 is what shrinking reaches)."""
        total = sum(weights)
        r = self.int(0, total - 1)
        for i, w in enumerate(weights):
            if r < w:
                return i
            r -= w
        return len(weights) - 1

    def coin(self, pct):
        """True with probability ``pct`` percent; shrinks to False."""
        return self.int(0, 99) >= 100 - pct

    def elem(self, seq):
        seq = list(seq)
        return seq[self.int(0, len(seq) - 1)]


class RandomChooser(Chooser):
    """Seeded choices; ``trace`` records them (offsets from ``lo``) for replay and shrinking."""

    def __init__(self, seed):
        self.rng = random.Random(seed)
        self.trace = []

    def int(self, lo, hi):
        v = self.rng.randint(lo, hi)
        self.trace.append(v - lo)
        return v


class ReplayChooser(Chooser):
    """Replays a recorded trace; values out of range are clamped, a short trace is padded with 0."""

    def __init__(self, values):
        self.values = list(values)
        self.pos = 0
        self.trace = []

    def int(self, lo, hi):
        v = self.values[self.pos] if self.pos < len(self.values) else 0
        self.pos += 1
        v = max(0, min(v, hi - lo))
        self.trace.append(v)
        return lo + v


class HypothesisChooser(Chooser):
    def __init__(self, draw):
        from hypothesis import strategies as st
        self._st = st
        self.draw = draw

    def int(self, lo, hi):
        return self.draw(self._st.integers(lo, hi))


# -- scopes ----------------------------------------------------------------------------------
class Var:
    __slots__ = ("kind", "length", "attrs", "cls", "elem", "used", "view", "argview", "ident",
                 "deps")
    _ids = itertools.count(1)

    def __init__(self, kind, length=N, attrs=(), cls=None, elem=None, used=False, view=False,
                 argview=False, ident=None, deps=frozenset()):
        self.kind = kind
        self.length = length          # lists: N or None (unknown)
        self.attrs = set(attrs)       # objects: attribute names known to exist
        self.cls = cls                # objects: Box, Bag or Pt
        self.elem = elem              # iterators: f, ff, if, kf, f? (maybe empty)
        self.used = used              # iterators: consumed (maybe exhausted)
        self.view = view              # iterators: a dict view (reusable)
        self.argview = argview        # arrays: may be the argument x, or a view of it
        # the objects this name may be bound to (aliases share them), and for iterators the
        # objects they read lazily
        self.ident = ident if ident is not None else frozenset([next(Var._ids)])
        self.deps = frozenset(deps)

    def copy(self):
        return Var(self.kind, self.length, self.attrs, self.cls, self.elem, self.used, self.view,
                   self.argview, self.ident, self.deps)


class Scope:
    def __init__(self, vars=None):
        self.vars = vars if vars is not None else {}

    def child(self):
        return Scope({k: v.copy() for k, v in self.vars.items()})

    def of(self, kind, pred=None):
        return [n for n, v in self.vars.items() if v.kind == kind and (pred is None or pred(v))]

    def add(self, name, var):
        self.vars[name] = var

    def merge_from(self, branches, keep_new=()):
        """After a branch/loop: variables of this scope take the weakest facts of ``branches``
        (each a child scope that ran, or might have)."""
        for name, var in self.vars.items():
            for b in branches:
                bv = b.vars.get(name)
                if bv is None or bv.kind != var.kind:
                    continue
                var.attrs &= bv.attrs
                var.used = var.used or bv.used
                var.argview = var.argview or bv.argview
                var.ident = var.ident | bv.ident
                if bv.length != var.length:
                    var.length = None
        for name in keep_new:
            vs = [b.vars[name] for b in branches if name in b.vars]
            v = vs[0].copy()
            for o in vs[1:]:
                v.attrs &= o.attrs
                v.used = v.used or o.used
                v.argview = v.argview or o.argview
                v.ident = v.ident | o.ident
                v.deps = v.deps | o.deps
                if o.length != v.length:
                    v.length = None
                if o.cls != v.cls:
                    v.cls = None
            self.vars[name] = v


HELPERS = {
    "Box": '''class Box:
    def __init__(self, w):
        self.w = w

    def scaled(self, t):
        return self.w * t

    def bump(self, t):
        self.w = self.w + t
''',
    "Bag": '''class Bag(Box):
    def __init__(self, **kw):
        for k, v in kw.items():
            setattr(self, k, v)
''',
    "Pt": '''@dataclasses.dataclass
class Pt:
    w: float
    v: float
''',
    "Scale": '''class Scale:
    def __init__(self, c):
        self.c = c

    def __call__(self, t):
        return self.c * t
''',
    "helper": '''def helper(t, u):
    if t > u:
        return t * u
    return t - 0.5 * u
''',
    "scale_": '''def scale_(v, t):
    v *= t
    return v
''',
    "fill_": '''def fill_(v, t):
    v[0] = t
    return 0
''',
}
HELPER_ORDER = ("Box", "Bag", "Pt", "Scale", "helper", "scale_", "fill_")
HEADER = ("import copy\nimport dataclasses\nimport functools\nimport heapq\nimport itertools\n"
          "import math\nimport operator\n\nimport numpy as np\n")


class Program:
    def __init__(self, source, tags, trace=None):
        self.source = source
        self.tags = frozenset(tags)
        self.trace = trace

    def __repr__(self):
        return "Program(tags=%s):\n%s" % (sorted(self.tags), self.source)


class _Done(Exception):
    pass


# -- the generator ---------------------------------------------------------------------------
class Gen:
    def __init__(self, ch, exclude=frozenset(), max_stmts=9, max_depth=2):
        self.ch = ch
        self.ex = frozenset(exclude)
        self.tags = set()
        self.used_helpers = set()
        self.counter = 0
        self.max_stmts = max_stmts
        self.max_depth = max_depth

    # choices ---------------------------------------------------------------------------------
    def ok(self, *tags):
        return not any(t in self.ex for t in tags)

    def choose(self, options):
        """``options``: (weight, tags, thunk) with tags a str (space separated) or None;
        excluded ones are dropped; the chosen one's tags are recorded and its thunk called."""
        opts = []
        for w, tags, thunk in options:
            tl = tags.split() if tags else []
            if w > 0 and self.ok(*tl):
                opts.append((w, tl, thunk))
        i = self.ch.index([w for w, _, _ in opts])
        _, tl, thunk = opts[i]
        self.tags.update(tl)
        return thunk()

    def const(self):
        return self.ch.elem(CONSTS)

    def fresh(self, prefix):
        self.counter += 1
        return f"{prefix}{self.counter}"

    def idx(self, sc, allow_var=True):
        ns = sc.of("n") if allow_var else []
        if ns and self.ch.coin(40):
            return self.ch.elem(ns)
        return str(self.ch.int(-N, N - 1))

    def body_scope(self, sc, **names):
        """A scope for code that runs later or repeatedly (lambda, def, comprehension, loop body):
        iterators in it may be exhausted already."""
        b = sc.child()
        for v in b.vars.values():
            if v.kind == "i" and not v.view:
                v.used = True
        for nm, kind in names.items():
            b.add(nm, Var(kind))
        return b

    def comp(self, sc, iterable, bases, kinds, body, brackets="()"):
        """A comprehension over ``iterable`` (text, evaluated in ``sc``) with targets named after
        ``bases``; ``body(scope, names)`` gives the element text.  A target name that is bound
        around, or used in the iterable, is replaced by a fresh one, except in 'comp_shadow'
        programs (Python evaluates the first iterable outside the comprehension's scope)."""
        clash = [b for b in bases if b in sc.vars or re.search(r"\b%s\b" % b, iterable)]
        shadow = bool(clash) and self.ok("comp_shadow") and self.ch.coin(25)
        if shadow:
            self.tags.add("comp_shadow")
        names = [self.fresh(b) if b in clash and not shadow else b for b in bases]
        inner = self.body_scope(sc, **dict(zip(names, kinds)))
        text = body(inner, names)
        self.touch(sc, text)
        return f"{brackets[0]}{text} for {', '.join(names)} in {iterable}{brackets[1]}"

    def touch(self, sc, text, closure=False):
        """Iterators that ``text`` (a body that may run) mentions count as consumed; a closure
        (lambda, def) that reads an iterator or view is tagged 'closure_iter'."""
        for name, v in sc.vars.items():
            if v.kind == "i" and re.search(r"\b%s\b" % name, text):
                if closure:
                    self.tags.add("closure_iter")
                if not v.view:
                    v.used = True
        return text

    def bound(self, sc, kind, expr, **kw):
        """A Var for a new name bound to ``expr``: an alias (same objects) when ``expr`` is a
        name, or a view ``name[::-1]`` of one."""
        m = re.fullmatch(r"(\w+)(\[::-1\]|\[:\]|\[::1\])?", expr)
        if m and m.group(1) in sc.vars:
            src = sc.vars[m.group(1)]
            return Var(kind, ident=src.ident, argview=src.argview, length=src.length, **kw)
        return Var(kind, **kw)

    def deps(self, sc, expr):
        """The objects an iterator or a function reads (lazily): containers it names, and what
        the functions and iterators it names read."""
        out = set()
        for name, v in sc.vars.items():
            if re.search(r"\b%s\b" % name, expr):
                if v.kind in "aldo":
                    out |= v.ident
                elif v.kind in "fi":
                    out |= v.deps
        return frozenset(out)

    def lazy_readers(self, sc, name):
        """Iterators (maybe not consumed yet) and views that read the object(s) of ``name``."""
        ident = sc.vars[name].ident
        return [n for n, v in sc.vars.items() if v.kind == "i" and v.deps & ident]

    def loopvars(self, *bases):
        """Names for the targets of a for statement: fresh ones, or (in 'loop_var_reuse'
        programs) the plain names t, i, k... that comprehensions and lambdas also use (then a
        comprehension in a nested def may bind a name that is also a local of f)."""
        if self.ok("loop_var_reuse") and self.ch.coin(50):
            self.tags.add("loop_var_reuse")
            return list(bases)
        return [self.fresh(b) for b in bases]

    def mutable(self, sc, names):
        """``names`` that may be changed in place: all, or (when 'lazy_mutation' is left out)
        those no live iterator reads."""
        if self.ok("lazy_mutation"):
            return list(names)
        return [n for n in names if not self.lazy_readers(sc, n)]

    def mutate(self, sc, name):
        if self.lazy_readers(sc, name):
            self.tags.add("lazy_mutation")

    def helper(self, name):
        self.used_helpers.add(name)
        if name == "Bag":
            self.used_helpers.add("Box")

    # scalar expressions ----------------------------------------------------------------------
    def S(self, sc, d):
        ch = self.ch
        svars = sc.of("s")
        arrs = sc.of("a")
        lists = sc.of("l", lambda v: v.length == N)
        anylists = sc.of("l")
        dicts = sc.of("d")
        objs = sc.of("o", lambda v: v.attrs)
        ints = sc.of("n")
        keys = sc.of("k")
        its = sc.of("i")
        opts = [
            (8, None, lambda: ch.elem(svars)),
            (2, None, self.const),
            (3, None, lambda: f"{ch.elem(arrs)}[{self.idx(sc)}]"),
        ]
        if ints:
            opts.append((1, None, lambda: f"({ch.elem(ints)} + 0.5)"))
        if lists:
            opts.append((2, None, lambda: f"{ch.elem(lists)}[{self.idx(sc)}]"))
        if dicts:
            opts.append((2, None, lambda: f"{ch.elem(dicts)}['{ch.elem(KEYS)}']"))
            if keys:
                opts.append((2, None, lambda: f"{ch.elem(dicts)}[{ch.elem(keys)}]"))
        if objs:
            opts.append((3, None, lambda: self.attr_read(sc, ch.elem(objs))))
        if d <= 0:
            return self.choose(opts)
        e = d - 1
        opts += [
            (3, None, lambda: f"({self.S(sc, e)} + {self.S(sc, e)})"),
            (2, None, lambda: f"({self.S(sc, e)} - {self.S(sc, e)})"),
            (3, None, lambda: f"({self.S(sc, e)} * {self.S(sc, e)})"),
            (1, None, lambda: f"({self.S(sc, e)} / (1.0 + {self.S(sc, e)} ** 2))"),
            (1, None, lambda: f"(-{self.S(sc, e)})"),
            (1, None, lambda: f"({self.S(sc, e)} ** 2)"),
            (3, "np_ufunc", lambda: self.ufunc1(self.S(sc, e))),
            (1, "math", lambda: f"math.{ch.elem(['sin', 'cos', 'tanh'])}({self.S(sc, e)})"),
            (1, "abs", lambda: f"abs({self.S(sc, e)})"),
            (1, "minmax", lambda: f"{ch.elem(['max', 'min'])}({self.S(sc, e)}, {self.S(sc, e)})"),
            (1, "ternary", lambda: f"({self.S(sc, e)} if {self.cond(sc, e)} else {self.S(sc, e)})"),
            (4, "reduce_array", lambda: self.reduce_array(sc, e)),
            (1, "float_conv", lambda: f"float({self.A(sc, e)}[{self.idx(sc)}])"),
            (1, "tolist", lambda: f"{self.A(sc, e)}.tolist()[{self.idx(sc)}]"),
            (1, "item", lambda: f"{self.A(sc, e)}.item({ch.int(0, N - 1)})"),
            (4, None, lambda: self.reduce_list(sc, e)),
            (3, None, lambda: self.reduce_dict(sc, e)),
            (6, None, lambda: self.consume(sc, e, *self.iter_expr(sc, e))),
            (2, "call", lambda: f"{self.F(sc, e)}({self.S(sc, e)})"),
            (1, "helper", lambda: self.call_helper(sc, e)),
            (2, "r_", lambda: self.r_scalar(sc, e)),
            (1, "c_", lambda: self.c_scalar(sc, e)),
            (1, "float_conv", lambda: f"float({self.S(sc, e)})"),
            (1, "complex", lambda: self.complex_scalar(sc, e)),
        ]
        if objs:
            opts.append((1, "method", lambda: self.method_call(sc, e, ch.elem(objs))))
        if its:
            opts.append((3, "iter_var", lambda: self.consume_var(sc, e, ch.elem(its))))
        if anylists:
            opts.append((1, None, lambda: f"sum({ch.elem(anylists)})"))
        return self.choose(opts)

    def complex_scalar(self, sc, d):
        """A real number computed through complex values: Python complex arithmetic, a real
        scalar broadcast against a complex array, a real array turned complex."""
        ch = self.ch
        return ch.elem([
            lambda: f"abs({self.S(sc, d)} + {self.S(sc, d)} * 1j)",
            lambda: f"float(np.sum(np.abs({self.S(sc, d)} + np.array([1 + 2j, -0.5j, 3.0])) ** 2))",
            lambda: f"float(np.real(np.sum(np.exp(0.5j * {self.A(sc, d)}))))",
            lambda: f"float(np.sum(({self.A(sc, d)} * (0.5 - 1j)).imag ** 2))",
            lambda: f"(({self.S(sc, d)} + 2j) * ({self.S(sc, d)} - 1j)).real",
            lambda: f"({self.S(sc, d)} * (0.5 + 1j)).{self.ch.elem(['real', 'imag'])}",
        ])()

    def ufunc1(self, s):
        ch = self.ch
        return ch.elem([f"np.sin({s})", f"np.cos({s})", f"np.tanh({s})", f"np.exp(0.3 * {s})",
                        f"np.log1p({s} ** 2)", f"np.sqrt(1.0 + {s} ** 2)", f"np.arctan({s})"])

    def cond(self, sc, d):
        ch = self.ch
        return self.choose([
            (4, None, lambda: f"{self.S(sc, d)} > {ch.elem(THRESH)}"),
            (1, None, lambda: f"{self.S(sc, d)} < {self.S(sc, d)}"),
            (1, None, lambda: f"y > {ch.elem(THRESH)}"),
        ])

    def attr_read(self, sc, o):
        ch = self.ch
        a = ch.elem(sorted(sc.vars[o].attrs))
        return self.choose([
            (4, None, lambda: f"{o}.{a}"),
            (1, "getattr", lambda: f"getattr({o}, '{a}')"),
            (1, "__dict__", lambda: f"{o}.__dict__['{a}']"),
            (1, "vars", lambda: f"vars({o})['{a}']"),
        ])

    def method_call(self, sc, d, o):
        v = sc.vars[o]
        if v.cls in ("Box", "Bag") and "w" in v.attrs:
            return f"{o}.scaled({self.S(sc, d)})"
        return f"{o}.{self.ch.elem(sorted(v.attrs))}"

    def call_helper(self, sc, d):
        self.helper("helper")
        return f"helper({self.S(sc, d)}, {self.S(sc, d)})"

    def reduce_array(self, sc, d):
        ch = self.ch
        a = lambda: self.A(sc, d)  # noqa: E731
        return self.choose([
            (4, None, lambda: f"np.sum({a()})"),
            (2, None, lambda: f"{a()}.sum()"),
            (1, None, lambda: f"np.mean({a()})"),
            (2, None, lambda: f"np.dot({a()}, {a()})"),
            (1, None, lambda: f"({a()} @ {a()})"),
            (1, None, lambda: f"np.{ch.elem(['max', 'min'])}({a()})"),
            (1, None, lambda: f"np.prod({a()})"),
            (1, None, lambda: f"sum({a()})"),
        ])

    def reduce_list(self, sc, d):
        ch = self.ch
        L = lambda: self.L(sc, d)  # noqa: E731
        return self.choose([
            (4, None, lambda: f"sum({L()})"),
            (2, None, lambda: f"{L()}[{self.idx(sc)}]"),
            (2, "minmax", lambda: f"{ch.elem(['max', 'min'])}({L()})"),
            (2, "sorted", lambda: f"sorted({L()})[{self.idx(sc)}]"),
            (2, "sorted_key", lambda: f"sorted({L()}, key={self.K(sc, d)})[{self.idx(sc)}]"),
            (2, "minmax_key", lambda: f"{ch.elem(['max', 'min'])}({L()}, key={self.K(sc, d)})"),
            (1, "reduce", lambda: f"functools.reduce(operator.{ch.elem(['add', 'mul'])}, {L()})"),
            (1, "iter next", lambda: f"next(iter({L()}))"),
            (1, "heapq", lambda: f"heapq.{ch.elem(['nsmallest', 'nlargest'])}(2, {L()})[{ch.int(0, 1)}]"),
            (1, "heapq minmax_key",
             lambda: f"heapq.{ch.elem(['nsmallest', 'nlargest'])}(2, {L()}, key={self.K(sc, d)})[{ch.int(0, 1)}]"),
        ])

    def reduce_dict(self, sc, d):
        ch = self.ch
        D = lambda: self.D(sc, d)  # noqa: E731
        return self.choose([
            (4, "dict_view", lambda: f"sum({D()}.values())"),
            (2, None, lambda: f"{D()}['{ch.elem(KEYS)}']"),
            (1, "dict_view minmax", lambda: f"{ch.elem(['max', 'min'])}({D()}.values())"),
            (2, "dict_view genexpr", lambda: "sum" + self.comp(
                sc, f"{D()}.values()", ["v"], ["s"], lambda b, n: f"{n[0]} * {n[0]}")),
            (1, "genexpr", lambda: self._dict_keysum(sc, d)),
            (2, "dict_view minmax_key itemgetter",
             lambda: f"{ch.elem(['max', 'min'])}({D()}.items(), key=operator.itemgetter(1))[1]"),
            (1, "dict_get minmax_key", lambda: self._dict_argmax(sc, d)),
            (1, "float_keys dict_view", lambda: f"sum(dict(zip({self.seq(sc, d)}, {self.seq(sc, d)})).values())"),
            (1, "float_keys dict_view sorted",
             lambda: f"sorted(dict(zip({self.seq(sc, d)}, {self.seq(sc, d)})).items())[{self.idx(sc)}][1]"),
            (1, "dict_view sorted_key",
             lambda: f"sorted({D()}.items(), key=lambda kv: kv[1])[{self.idx(sc)}][1]"),
        ])

    def _dict_keysum(self, sc, d):
        dn = self.D(sc, d)
        view = self.ch.elem(["", ".keys()"])
        if view:
            self.tags.add("dict_view")
        return "sum" + self.comp(sc, f"{dn}{view}", ["k"], ["k"], lambda b, n: f"{dn}[{n[0]}]")

    def _dict_argmax(self, sc, d):
        ds = sc.of("d")
        if ds:
            dn = self.ch.elem(ds)
            return f"{dn}[{self.ch.elem(['max', 'min'])}({dn}, key={dn}.get)]"
        return f"sum({self.D(sc, d)}.values())"

    # iterators -------------------------------------------------------------------------------
    def seq(self, sc, d):
        """A sequence of N floats: a list or an array expression."""
        return self.choose([
            (1, None, lambda: self.L(sc, d)),
            (1, None, lambda: self.A(sc, d)),
        ])

    def iter_expr(self, sc, d):
        """(expression, element kind): a fresh iterator or view."""
        ch = self.ch
        P = lambda: self.seq(sc, d)  # noqa: E731
        return self.choose([
            (4, "zip", lambda: (f"zip({P()}, {P()})", "ff")),
            (3, "enumerate", lambda: (f"enumerate({P()})", "if")),
            (3, "map", lambda: (f"map({self.F(sc, d)}, {P()})", "f")),
            (1, "map2", lambda: (f"map(operator.mul, {P()}, {P()})", "f")),
            (2, "reversed", lambda: (f"reversed({P()})", "f")),
            (1, "iter", lambda: (f"iter({P()})", "f")),
            (2, "filter", lambda: (f"filter(lambda t: t > {ch.elem(THRESH)}, {P()})", "f?")),
            (2, "genexpr", lambda: (self.genexpr(sc, d), "f")),
            (2, "dict_view", lambda: (f"{self.D(sc, d)}.values()", "f")),
            (2, "dict_view", lambda: (f"{self.D(sc, d)}.items()", "kf")),
            (1, "zip", lambda: (f"zip({KEYS!r}, {P()})", "kf")),
        ])

    def genexpr(self, sc, d):
        return self.comp(sc, self.seq(sc, d), ["t"], ["s"], lambda b, n: self.S(b, d))

    def consume(self, sc, d, it, elem, exhausted=False):
        """A scalar expression that consumes iterator ``it`` with elements ``elem``.  An exhausted
        iterator yields nothing, so only consumers that accept an empty iterable are used."""
        ch = self.ch
        j = lambda: ch.int(0, 1)  # noqa: E731
        F = lambda: self.K(sc, d)  # noqa: E731
        i = lambda: self.idx(sc)  # noqa: E731
        mm = lambda: ch.elem(["max", "min"])  # noqa: E731
        if elem == "ff":
            empty = [(4, "genexpr", lambda: "sum" + self.comp(sc, it, ["p", "q"], ["s", "s"],
                                                              lambda b, n: f"{n[0]} * {n[1]}")),
                     (1, "starmap", lambda: f"sum(itertools.starmap(operator.mul, {it}))")]
            full = [
                (3, "minmax_key itemgetter", lambda: f"{mm()}({it}, key=operator.itemgetter({j()}))[{j()}]"),
                (2, "minmax_key lambda", lambda: f"{mm()}({it}, key=lambda pq: pq[0] * pq[1])[{j()}]"),
                (3, "sorted_key itemgetter", lambda: f"sorted({it}, key=operator.itemgetter({j()}))[{i()}][{j()}]"),
                (1, "sorted", lambda: f"sorted({it})[{i()}][{j()}]"),
                (1, None, lambda: f"list({it})[{i()}][{j()}]"),
            ]
        elif elem == "if":
            empty = [(4, "genexpr", lambda: "sum" + self.comp(sc, it, ["i", "v"], ["n", "s"],
                                                              lambda b, n: f"{n[1]} * ({n[0]} + 1)"))]
            full = [
                (3, "minmax_key itemgetter", lambda: f"{mm()}({it}, key=operator.itemgetter(1))[1]"),
                (2, "minmax_key lambda", lambda: f"{mm()}({it}, key=lambda iv: iv[1] * (iv[0] - 1.5))[1]"),
                (2, "sorted_key lambda", lambda: f"sorted({it}, key=lambda iv: -iv[1])[{i()}][1]"),
                (1, None, lambda: f"dict({it})[{ch.int(0, N - 1)}]"),
            ]
        elif elem == "kf":
            empty = [(4, "genexpr", lambda: "sum" + self.comp(sc, it, ["k", "v"], ["k", "s"],
                                                              lambda b, n: n[1]))]
            full = [
                (2, "minmax_key itemgetter", lambda: f"{mm()}({it}, key=operator.itemgetter(1))[1]"),
                (2, "dict_ctor", lambda: f"dict({it})['{ch.elem(KEYS)}']"),
                (2, "sorted_key lambda", lambda: f"sorted({it}, key=lambda kv: kv[1])[{i()}][1]"),
            ]
        else:  # f, f?
            empty = [(4, None, lambda: f"sum({it})"),
                     (1, "genexpr", lambda: "sum" + self.comp(sc, it, ["t"], ["s"],
                                                              lambda b, n: f"{n[0]} * {n[0]}"))]
            full = [
                (2, "minmax", lambda: f"{mm()}({it})"),
                (2, "sorted", lambda: f"sorted({it})[{i()}]"),
                (1, "minmax_key", lambda: f"{mm()}({it}, key={F()})"),
                (1, None, lambda: f"list({it})[{i()}]"),
                (1, "next", lambda: f"next({it})"),
                (1, "reduce_iter", lambda: f"functools.reduce(operator.add, {it})"),
            ]
            if elem == "f?":
                full = []
        return self.choose(empty + ([] if exhausted else full))

    def consume_var(self, sc, d, name):
        v = sc.vars[name]
        exhausted = v.used and not v.view
        if exhausted:
            self.tags.add("iter_reuse")
        out = self.consume(sc, d, name, v.elem, exhausted=exhausted)
        if not v.view:
            v.used = True
        return out

    # callables -------------------------------------------------------------------------------
    def F(self, sc, d):
        ch = self.ch
        funcs = sc.of("f")
        objs = sc.of("o", lambda v: v.cls in ("Box", "Bag") and "w" in v.attrs)
        b = self.body_scope(sc, t="s")
        e = max(d - 1, 0)
        opts = [
            (4, "lambda", lambda: self.touch(sc, closure=True, text=ch.elem([
                lambda: f"(lambda t: t * {self.S(b, e)})",
                lambda: f"(lambda t: np.sin(t) + {self.S(b, e)})",
                lambda: f"(lambda t: (t - {self.S(b, e)}) ** 2)",
                lambda: f"(lambda t: {self.S(b, d)})",
            ])())),
            (1, "ufunc_value", lambda: ch.elem(["np.tanh", "np.sin", "abs"])),
            (1, "partial helper", lambda: self._partial(sc, e)),
            (1, "callable_obj", lambda: self._scale(sc, e)),
        ]
        if funcs:
            opts.insert(0, (4, None, lambda: ch.elem(funcs)))
        if objs:
            opts.append((1, "bound_method", lambda: f"{ch.elem(objs)}.scaled"))
        return self.choose(opts)

    def K(self, sc, d):
        """A key function for sorted/min/max/list.sort: mostly pure, sometimes a closure over
        values that carry derivatives (which s2sad may refuse)."""
        ch = self.ch
        return self.choose([
            (6, None, lambda: ch.elem(["(lambda t: -t)", "abs", "(lambda t: (t - 0.3) ** 2)",
                                       "np.sin", "(lambda t: t * t)", "float"])),
            (1, "key_closure", lambda: self.F(sc, d)),
        ])

    def _scale(self, sc, d):
        self.helper("Scale")
        return f"Scale({self.S(sc, d)})"

    def _partial(self, sc, d):
        self.helper("helper")
        return f"functools.partial(helper, u={self.S(sc, d)})"

    # arrays ----------------------------------------------------------------------------------
    def A(self, sc, d):
        ch = self.ch
        arrs = sc.of("a")
        opts = [(8, None, lambda: ch.elem(arrs))]
        if d <= 0:
            return self.choose(opts)
        e = d - 1
        A = lambda: self.A(sc, e)  # noqa: E731
        S = lambda: self.S(sc, e)  # noqa: E731
        opts += [
            (3, None, lambda: f"({A()} + {A()})"),
            (3, None, lambda: f"({A()} * {S()})"),
            (1, None, lambda: f"({S()} - {A()})"),
            (1, None, lambda: f"({A()} * {A()})"),
            (1, None, lambda: f"({A()} / (1.0 + {A()} ** 2))"),
            (3, "np_ufunc", lambda: self.ufunc1(A())),
            (1, None, lambda: f"{A()}[::-1]"),
            (1, "roll", lambda: f"np.roll({A()}, {ch.int(1, 2)})"),
            (1, "cumsum", lambda: f"np.cumsum({A()})"),
            (1, "np_sort", lambda: f"np.sort({A()})"),
            (4, "r_", lambda: self.r_array(sc, e)),
            (1, "r_range", lambda: f"({A()} * np.r_[0:{N}])"),
            (1, "r_directive", lambda: f"np.r_['0', {A()}[:1], {A()}[1:]]"),
            (3, "c_", lambda: self.c_array(sc, e)),
            (2, "np_array_of_list", lambda: f"np.array({self.L(sc, e)})"),
            (1, None, lambda: f"np.array([{S()}, {S()}, {S()}])"),
            (1, "listcomp", lambda: self._array_comp(sc, e)),
            (1, "where", lambda: f"np.where({A()} > {ch.elem(THRESH)}, {A()}, {S()} * {A()})"),
            (1, "np_maximum", lambda: f"np.{ch.elem(['maximum', 'minimum'])}({A()}, {S()})"),
            (1, "frompyfunc", lambda: f"np.frompyfunc({self.F(sc, e)}, 1, 1)({A()}).astype(float)"),
            (1, "vectorize", lambda: f"np.vectorize({self.F(sc, e)})({A()})"),
            (1, "concat", lambda: f"np.concatenate([{A()}[:1], {A()}[1:]])"),
            (1, "stack", lambda: f"np.stack([{S()}, {S()}, {S()}])"),
        ]
        return self.choose(opts)

    def _array_comp(self, sc, d):
        fn = self.F(sc, d)
        return "np.array(" + self.comp(sc, self.A(sc, d), ["t"], ["s"],
                                       lambda b, n: f"{fn}({n[0]})", "[]") + ")"

    def r_array(self, sc, d):
        A = lambda: self.A(sc, d)  # noqa: E731
        S = lambda: self.S(sc, d)  # noqa: E731
        return self.ch.elem([
            lambda: f"np.r_[{A()}[1:], {S()}]",
            lambda: f"np.r_[{S()}, {A()}[:2]]",
            lambda: f"np.r_[{A()}[:1], {A()}[1:]]",
            lambda: f"np.r_[{S()}, {S()}, {S()}]",
            lambda: f"np.r_[{A()}[:2], [{S()}]]",
            lambda: f"np.r_[{self.const()}, {A()}[1:]]",
        ])()

    def c_array(self, sc, d):
        A = lambda: self.A(sc, d)  # noqa: E731
        S = lambda: self.S(sc, d)  # noqa: E731
        return self.ch.elem([
            lambda: f"np.c_[{A()}, {A()}].sum(axis=1)",
            lambda: f"np.c_[{A()}, {A()}][:, {self.ch.int(0, 1)}]",
            lambda: f"(np.c_[{A()}, {A()}] @ np.array([{S()}, {S()}]))",
            lambda: f"np.c_[{A()}, {S()} * np.ones({N})][:, {self.ch.int(0, 1)}]",
        ])()

    def r_scalar(self, sc, d):
        A = lambda: self.A(sc, d)  # noqa: E731
        S = lambda: self.S(sc, d)  # noqa: E731
        return self.ch.elem([
            lambda: f"np.sum(np.r_[{A()}, {S()}])",
            lambda: f"np.r_[{S()}, {A()}][{self.ch.int(0, N)}]",
            lambda: f"np.r_[{A()}, {A()}][{self.ch.int(0, 2 * N - 1)}]",
            lambda: f"np.sum(np.r_[{S()}, {A()}, {self.L(sc, d)}])",
            lambda: f"np.dot(np.r_[{A()}, {S()}], np.r_[0:{N + 1}])",
        ])()

    def c_scalar(self, sc, d):
        A = lambda: self.A(sc, d)  # noqa: E731
        return self.ch.elem([
            lambda: f"np.c_[{A()}, {A()}].sum()",
            lambda: f"np.c_[{A()}, {A()}][{self.ch.int(0, N - 1)}, {self.ch.int(0, 1)}]",
            lambda: f"np.sum(np.c_[{A()}, {A()}] ** 2)",
        ])()

    # lists -----------------------------------------------------------------------------------
    def L(self, sc, d):
        """A list expression of length N."""
        ch = self.ch
        lists = sc.of("l", lambda v: v.length == N)
        S = lambda: self.S(sc, d)  # noqa: E731
        opts = [(1, None, lambda: f"[{S()}, {S()}, {S()}]")]
        if lists:
            opts.insert(0, (8, None, lambda: ch.elem(lists)))
        if d <= 0:
            return self.choose(opts)
        e = d - 1
        Ae = lambda: self.A(sc, e)  # noqa: E731
        Le = lambda: self.L(sc, e)  # noqa: E731
        Pe = lambda: self.seq(sc, e)  # noqa: E731
        opts += [
            (2, None, lambda: f"list({Ae()})"),
            (1, "tolist", lambda: f"{Ae()}.tolist()"),
            (3, "listcomp", lambda: self.comp(sc, Pe(), ["t"], ["s"], lambda b, n: self.S(b, e), "[]")),
            (2, "map", lambda: f"list(map({self.F(sc, e)}, {Pe()}))"),
            (1, "sorted", lambda: f"sorted({Pe()})"),
            (2, "sorted_key", lambda: f"sorted({Pe()}, key={self.K(sc, e)})"),
            (1, "reversed", lambda: f"list(reversed({Pe()}))"),
            (2, "zip listcomp", lambda: self.comp(sc, f"zip({Pe()}, {Pe()})", ["p", "q"], ["s", "s"],
                                                  lambda b, n: self.S(b, e), "[]")),
            (2, "enumerate listcomp", lambda: self.comp(sc, f"enumerate({Pe()})", ["i", "v"], ["n", "s"],
                                                        lambda b, n: self.S(b, e), "[]")),
            (1, "list_slice", lambda: f"{Le()}[::-1]"),
            (1, "list_concat", lambda: f"({Le()}[1:] + {Le()}[:1])"),
            (2, "dict_view", lambda: f"list({self.D(sc, e)}.values())"),
            (1, None, lambda: self._dict_to_list(sc, e)),
            (1, "dict_view sorted", lambda: self.comp(sc, f"sorted({self.D(sc, e)}.items())", ["k", "v"],
                                                      ["k", "s"], lambda b, n: n[1], "[]")),
            (1, "starmap zip", lambda: f"list(itertools.starmap(operator.mul, zip({Pe()}, {Pe()})))"),
            (1, "accumulate", lambda: f"list(itertools.accumulate({Pe()}))"),
            (2, "sorted_key zip itemgetter listcomp",
             lambda: self.comp(sc, f"sorted(zip({Pe()}, {Pe()}), key=operator.itemgetter({ch.int(0, 1)}))",
                               ["p", "q"], ["s", "s"], lambda b, n: n[0], "[]")),
            (1, "deepcopy", lambda: f"copy.deepcopy({Le()})"),
        ]
        return self.choose(opts)

    def _dict_to_list(self, sc, d):
        dn = self.D(sc, d)
        return self.comp(sc, repr(KEYS), ["k"], ["k"], lambda b, n: f"{dn}[{n[0]}]", "[]")

    # dicts -----------------------------------------------------------------------------------
    def D(self, sc, d):
        ch = self.ch
        dicts = sc.of("d")
        S = lambda: self.S(sc, d)  # noqa: E731
        opts = [(1, None, lambda: "{" + ", ".join(f"'{k}': {S()}" for k in KEYS) + "}")]
        if dicts:
            opts.insert(0, (8, None, lambda: ch.elem(dicts)))
        if d <= 0:
            return self.choose(opts)
        e = d - 1
        De = lambda: self.D(sc, e)  # noqa: E731
        opts += [
            (3, "zip dict_ctor", lambda: f"dict(zip({KEYS!r}, {self.seq(sc, e)}))"),
            (1, "dict_ctor", lambda: "dict(" + ", ".join(f"{k}={S()}" for k in KEYS) + ")"),
            (3, "dictcomp dict_view", lambda: self.comp(sc, f"{De()}.items()", ["k", "v"], ["k", "s"],
                                                        lambda b, n: f"{n[0]}: {self.S(b, e)}", "{}")),
            (2, "dictcomp enumerate", lambda: self.comp(sc, f"enumerate({KEYS!r})", ["i", "k"], ["n", "k"],
                                                        lambda b, n: f"{n[1]}: {self.S(b, e)}", "{}")),
            (1, "dict_copy", lambda: ch.elem([f"dict({De()})", f"{De()}.copy()", f"{{**{De()}}}"])),
            (1, "dict_view sorted_key dict_ctor",
             lambda: f"dict(sorted({De()}.items(), key=lambda kv: kv[1]))"),
            (1, "deepcopy", lambda: f"copy.deepcopy({De()})"),
            (2, "zip sorted_key itemgetter dict_ctor",
             lambda: f"dict(sorted(zip({KEYS!r}, {self.seq(sc, e)}), key=operator.itemgetter(1)))"),
            (2, "zip sorted_key itemgetter dictcomp",
             lambda: self.comp(sc, f"sorted(zip({KEYS!r}, {self.seq(sc, e)}), key=operator.itemgetter(1))",
                               ["n", "c"], ["k", "s"], lambda b, n: f"{n[0]}: {n[1]}", "{}")),
        ]
        return self.choose(opts)

    # objects ---------------------------------------------------------------------------------
    def new_obj(self, sc, d):
        """(expression, Var) for a new object."""
        ch = self.ch
        S = lambda: self.S(sc, d)  # noqa: E731

        def box():
            self.helper("Box")
            return f"Box({S()})", Var("o", attrs={"w"}, cls="Box")

        def bag():
            self.helper("Bag")
            names = ["w"] + [k for k in ("v", "u") if ch.coin(50)]
            return "Bag(" + ", ".join(f"{k}={S()}" for k in names) + ")", Var("o", attrs=names, cls="Bag")

        def pt():
            self.helper("Pt")
            return f"Pt({S()}, {S()})", Var("o", attrs={"w", "v"}, cls="Pt")

        objs = sc.of("o", lambda v: v.attrs)

        def cp():
            o = ch.elem(objs)
            v = sc.vars[o]
            return f"copy.copy({o})", v.copy()

        def rep():
            o = ch.elem(sc.of("o", lambda v: v.cls == "Pt"))
            return f"dataclasses.replace({o}, w={S()})", sc.vars[o].copy()

        opts = [(4, "class", box), (2, "class_kw setattr", bag), (2, "dataclass", pt)]
        if objs:
            opts.append((1, "copy", cp))
        if sc.of("o", lambda v: v.cls == "Pt"):
            opts.append((1, "dc_replace", rep))
        return self.choose(opts)

    # statements ------------------------------------------------------------------------------
    def block(self, sc, depth, lines, indent, first=False, min_stmts=1):
        """Statements appended to ``lines`` (at ``indent``); at least ``min_stmts``."""
        n = 0
        limit = self.max_stmts if first else 3
        while n < limit:
            if n >= min_stmts and not self.ch.coin(80 if first else 45):
                break
            self.stmt(sc, depth, lines, indent)
            n += 1

    def stmt(self, sc, depth, lines, indent):
        ch = self.ch
        pad = "    " * indent
        emit = lambda s: lines.append(pad + s)  # noqa: E731
        d = self.ch.int(0, 2)
        # arrays to write into: not x (that is 'argwrite'), and not an alias or view of x unless
        # 'alias_arg' is allowed
        arrs_owned = sc.of("a", lambda v: not v.argview or self.ok("alias_arg"))
        if "x" in arrs_owned:
            arrs_owned.remove("x")
        # containers to change in place (not those a live iterator reads, unless 'lazy_mutation')
        arrs_owned = self.mutable(sc, arrs_owned)
        lists = self.mutable(sc, sc.of("l", lambda v: v.length == N))
        dicts = self.mutable(sc, sc.of("d"))
        objs = self.mutable(sc, sc.of("o"))

        def new_scalar():
            name = self.fresh("s")
            emit(f"{name} = {self.S(sc, d + 1)}")
            sc.add(name, Var("s"))

        def new_array():
            name = self.fresh("a")
            expr = self.A(sc, d + 1)
            if ch.coin(40):
                expr = ch.elem([f"{expr}.copy()", f"np.array({expr})"])
            elif re.fullmatch(r"\w+", expr) and self.ok("view") and ch.coin(30):
                self.tags.add("view")
                expr = ch.elem([f"{expr}[:]", f"{expr}[::1]"])
            emit(f"{name} = {expr}")
            sc.add(name, self.bound(sc, "a", expr))

        def new_list():
            name = self.fresh("l")
            expr = self.L(sc, d + 1)
            emit(f"{name} = {expr}")
            sc.add(name, self.bound(sc, "l", expr))

        def new_dict():
            name = self.fresh("d")
            expr = self.D(sc, d + 1)
            emit(f"{name} = {expr}")
            sc.add(name, self.bound(sc, "d", expr))

        def new_obj():
            name = self.fresh("o")
            expr, var = self.new_obj(sc, d)
            emit(f"{name} = {expr}")
            sc.add(name, var)

        def new_func():
            name = self.fresh("g")
            expr = self.F(sc, d + 1)
            emit(f"{name} = {expr}")
            sc.add(name, Var("f", deps=self.deps(sc, expr)))

        def new_closure():
            name = self.fresh("g")
            inner = self.body_scope(sc, t="s")
            start = len(lines)
            emit(f"def {name}(t):")
            if ch.coin(50) and self.ok("inner_early_return"):
                self.tags.add("inner_early_return")
                emit(f"    if {self.cond(inner, 0)}:")
                emit(f"        return {self.S(inner, d)}")
            emit(f"    return {self.S(inner, d + 1)}")
            text = "\n".join(lines[start:])
            self.touch(sc, text, closure=True)
            sc.add(name, Var("f", deps=self.deps(sc, text)))

        def new_iter():
            name = self.fresh("it")
            expr, elem = self.iter_expr(sc, d)
            emit(f"{name} = {expr}")
            sc.add(name, Var("i", elem=elem, view=expr.endswith((".values()", ".items()")),
                             deps=self.deps(sc, expr)))

        def alias():
            kind = ch.elem([k for k in "ald" if sc.of(k)])
            src = ch.elem(sc.of(kind))
            name = self.fresh(kind)
            emit(f"{name} = {src}")
            sc.add(name, sc.vars[src].copy())

        def inplace_array():
            a = ch.elem(arrs_owned)
            self.mutate(sc, a)
            S = lambda: self.S(sc, d)  # noqa: E731
            if sc.vars[a].argview:
                self.tags.add("alias_arg")
            ch.elem([
                lambda: emit(f"{a}[{self.idx(sc)}] = {S()}"),
                lambda: emit(f"{a}[{self.idx(sc)}] += {S()}"),
                lambda: emit(f"{a} *= {S()}"),
                lambda: emit(f"{a} += {self.A(sc, d)}"),
                lambda: emit(f"{a}[1:] = {self.A(sc, d)}[:2]"),
                lambda: emit(f"{a}[:2] -= {S()}"),
                lambda: emit(f"{a}[::2] *= {S()}"),
                lambda: emit(f"_ = np.copyto({a}, {S()})"),     # (its None assigned: refused)
                helper_argwrite,
            ])()

        def helper_argwrite():
            # a function of the user's changing its argument in place (v *= t), also one whose
            # result, a status code, is assigned and carries no derivative (v[0] = t): refused
            a = ch.elem(arrs_owned)
            self.mutate(sc, a)
            self.tags.add("helper_argwrite")
            if ch.coin(50):
                self.helper("scale_")
                emit(f"scale_({a}, {self.S(sc, d)})")
            else:
                self.helper("fill_")
                emit(f"_st = fill_({a}, {self.S(sc, d)})")

        def inplace_list():
            ln = ch.elem(lists)
            self.mutate(sc, ln)
            S = lambda: self.S(sc, d)  # noqa: E731
            ch.elem([
                lambda: emit(f"{ln}[{self.idx(sc)}] = {S()}"),
                lambda: emit(f"{ln}[{self.idx(sc)}] += {S()}"),
                lambda: emit(f"{ln}[{self.idx(sc)}] *= {S()}"),
                lambda: emit(f"{ln}[0], {ln}[2] = {ln}[2], {ln}[0]"),
            ])()

        def list_method():
            ln = ch.elem(lists)
            self.mutate(sc, ln)
            ch.elem([
                lambda: emit(f"{ln}.sort()"),
                lambda: emit(f"{ln}.reverse()"),
                lambda: emit(f"{ln}.sort(key={self.K(sc, d)})"),
                lambda: emit(f"{ln}.insert(0, {self.S(sc, d)}); {ln}.pop()"),
            ])()

        def inplace_dict():
            dn = ch.elem(dicts)
            self.mutate(sc, dn)
            k = ch.elem(KEYS)
            S = lambda: self.S(sc, d)  # noqa: E731
            ch.elem([
                lambda: emit(f"{dn}['{k}'] = {S()}"),
                lambda: emit(f"{dn}['{k}'] += {S()}"),
                lambda: emit(f"{dn}.update({k}={S()})"),
                lambda: emit(f"{dn}.update({{'{k}': {S()}}})"),
            ])()

        def attr_write():
            o = ch.elem(objs)
            self.mutate(sc, o)
            v = sc.vars[o]
            names = ["w", "v", "u"]
            if not self.ok("attr_overwrite"):
                names = [n for n in names if n not in v.attrs] or [self.fresh("z")]
            name = ch.elem(names)
            if name in v.attrs:
                self.tags.add("attr_overwrite")
            S = lambda: self.S(sc, d)  # noqa: E731
            forms = [(4, "attr_write", lambda: emit(f"{o}.{name} = {S()}")),
                     (2, "setattr", lambda: emit(f"setattr({o}, '{name}', {S()})")),
                     (2, "__dict__", lambda: emit(f"{o}.__dict__['{name}'] = {S()}")),
                     (1, "vars", lambda: emit(f"vars({o})['{name}'] = {S()}")),
                     (1, "__dict__", lambda: emit(f"{o}.__dict__.update({name}={S()})"))]
            if name in v.attrs:
                forms += [(2, "attr_augwrite", lambda: emit(f"{o}.{name} += {S()}")),
                          (1, "attr_augwrite __dict__", lambda: emit(f"{o}.__dict__['{name}'] *= {S()}"))]
            if v.cls in ("Box", "Bag") and "w" in v.attrs:
                forms.append((2, "method_mutate attr_overwrite", lambda: emit(f"{o}.bump({S()})")))
            self.choose(forms)
            v.attrs.add(name)

        def branch():
            """if/else that defines one new variable in both branches (a join of containers)."""
            kind = ch.elem("sldoa")
            name = self.fresh(kind)
            if kind != "s":
                self.tags.add("branch_container")
            emit(f"if {self.cond(sc, d)}:")
            scopes = []
            for arm in range(2):
                if arm:
                    emit("else:")
                b = sc.child()
                if depth > 0 and ch.coin(40):
                    self.block(b, depth - 1, lines, indent + 1)
                sub = []
                if kind == "s":
                    sub.append(f"{name} = {self.S(b, d + 1)}")
                    b.add(name, Var("s"))
                elif kind in "lda":
                    expr = {"l": self.L, "d": self.D, "a": self.A}[kind](b, d + 1)
                    sub.append(f"{name} = {expr}")
                    b.add(name, self.bound(b, kind, expr))
                else:
                    expr, var = self.new_obj(b, d)
                    sub.append(f"{name} = {expr}")
                    b.add(name, var)
                    if ch.coin(50):
                        bs = []
                        attr_write_into(b, name, bs)
                        sub += bs
                lines.extend("    " * (indent + 1) + s for s in sub)
                scopes.append(b)
            sc.merge_from(scopes, keep_new=[name])

        def attr_write_into(b, o, out):
            nm = ch.elem([n for n in ("v", "u") if n not in b.vars[o].attrs] or [self.fresh("z")])
            out.append(self.choose([
                (2, "attr_write", lambda: f"{o}.{nm} = {self.S(b, d)}"),
                (1, "setattr", lambda: f"setattr({o}, '{nm}', {self.S(b, d)})"),
                (1, "__dict__", lambda: f"{o}.__dict__['{nm}'] = {self.S(b, d)}"),
            ]))
            b.vars[o].attrs.add(nm)

        def if_only():
            emit(f"if {self.cond(sc, d)}:")
            b = sc.child()
            self.block(b, depth - 1, lines, indent + 1)
            sc.merge_from([b])

        def loop():
            self.loop(sc, depth, lines, indent, d)

        def early_return():
            emit(f"if {self.cond(sc, d)}:")
            emit(f"    return {self.ret_expr(sc)}")

        def argwrite():
            emit(f"x[{self.idx(sc)}] {ch.elem(['=', '+=', '*='])} {self.S(sc, d)}")

        opts = [
            (24, None, new_scalar),
            (12, None, new_array),
            (12, None, new_list),
            (9, None, new_dict),
            (9, "class", new_obj),
            (6, "lambda", new_func),
            (6, "closure", new_closure),
            (9, "iter_var", new_iter),
            (1, "argwrite inplace_array", argwrite),
        ]
        if arrs_owned:
            opts.append((9, "inplace_array", inplace_array))
        if lists:
            opts += [(9, "inplace_list", inplace_list), (6, "list_method", list_method)]
        if dicts:
            opts.append((9, "inplace_dict", inplace_dict))
        if objs:
            opts.append((15, None, attr_write))
        if [k for k in "ld" if sc.of(k)] or len(sc.of("a")) > 1:
            opts.append((3, "alias", alias))
        if depth > 0:
            opts += [
                (15, "branch", branch),
                (6, "branch", if_only),
                (18, "loop", loop),
            ]
        opts.append((6, "early_return", early_return))
        self.choose(opts)

    def loop(self, sc, depth, lines, indent, d):
        """A for/while loop that updates an accumulator, or builds a container."""
        ch = self.ch
        pad = "    " * indent
        emit = lambda s: lines.append(pad + s)  # noqa: E731
        body = self.body_scope(sc)

        def header_for():
            """A for-header over some iterable; loop variables added to ``body``."""
            its = sc.of("i")
            opts = [
                (3, None, lambda: ("t", self.seq(sc, d), {"t": "s"}, N)),
                (2, None, lambda: ("i", f"range({N})", {"i": "n"}, N)),
                (2, "zip", lambda: ("p, q", f"zip({self.seq(sc, d)}, {self.seq(sc, d)})", {"p": "s", "q": "s"}, N)),
                (2, "enumerate", lambda: ("i, t", f"enumerate({self.seq(sc, d)})", {"i": "n", "t": "s"}, N)),
                (1, "reversed", lambda: ("t", f"reversed({self.seq(sc, d)})", {"t": "s"}, N)),
                (2, "dict_view", lambda: ("k, t", f"{self.D(sc, d)}.items()", {"k": "k", "t": "s"}, N)),
                (1, "dict_view", lambda: ("t", f"{self.D(sc, d)}.values()", {"t": "s"}, N)),
                (1, None, lambda: ("k", f"{self.D(sc, d)}", {"k": "k"}, N)),
                (1, "sorted_key", lambda: ("t", f"sorted({self.seq(sc, d)}, key={self.K(sc, d)})", {"t": "s"}, N)),
                (1, "map", lambda: ("t", f"map({self.F(sc, d)}, {self.seq(sc, d)})", {"t": "s"}, N)),
            ]
            if its:
                opts.append((2, "iter_var", lambda: self._iter_header(sc, ch.elem(its))))
            target, it, names, length = self.choose(opts)
            bases = target.split(", ")
            new = dict(zip(bases, self.loopvars(*bases)))
            target = ", ".join(new[b] for b in bases)
            names = {new[b]: kind for b, kind in names.items()}
            for nm, kind in names.items():
                body.add(nm, Var(kind))
            return target, it, length

        def cut():
            """An optional break/continue (the loop may stop early)."""
            if ch.coin(30):
                kw = self.choose([(1, "break", lambda: "break"), (1, "continue", lambda: "continue")])
                lines.append(pad + f"    if {self.cond(body, 0)}:")
                lines.append(pad + f"        {kw}")
                return True
            return False

        def accumulate():
            acc = self.fresh("acc")
            emit(f"{acc} = {ch.elem(['0.0', 'y', '1.0'])}")
            body.add(acc, Var("s"))
            target, it, _ = header_for()
            emit(f"for {target} in {it}:")
            early = cut()
            if depth > 1 and ch.coin(30):
                self.block(body, depth - 1, lines, indent + 1)
            upd = ch.elem([
                lambda: f"{acc} = {acc} + {self.S(body, d + 1)}",
                lambda: f"{acc} += {self.S(body, d + 1)}",
                lambda: f"{acc} = {acc} * np.tanh({self.S(body, d)})",
                lambda: f"{acc} = {self.S(body, d)} * {acc} + {self.S(body, d)}",
            ])()
            lines.append(pad + "    " + upd)
            if not early and ch.coin(20):
                cut()
            sc.merge_from([body])
            sc.add(acc, Var("s"))

        def build_list():
            name = self.fresh("l")
            emit(f"{name} = []")
            target, it, length = header_for()
            emit(f"for {target} in {it}:")
            early = cut()
            lines.append(pad + f"    {name}.append({self.S(body, d + 1)})")
            sc.merge_from([body])
            sc.add(name, Var("l", length=None if early else length))

        def build_dict():
            name = self.fresh("d")
            emit(f"{name} = {{}}")
            b2 = self.body_scope(sc)
            if ch.coin(50):
                i, k = self.loopvars("i", "k")
                b2.add(i, Var("n"))
                b2.add(k, Var("k"))
                emit(f"for {i}, {k} in enumerate({KEYS!r}):")
            else:
                k, t = self.loopvars("k", "t")
                b2.add(k, Var("k"))
                b2.add(t, Var("s"))
                self.tags.add("dict_view")
                emit(f"for {k}, {t} in {self.D(sc, d)}.items():")
            lines.append(pad + f"    {name}[{k}] = {self.S(b2, d + 1)}")
            sc.merge_from([b2])
            sc.add(name, Var("d"))

        def fill_array():
            name = self.fresh("a")
            emit(f"{name} = np.zeros({N})")
            i, = self.loopvars("i")
            b2 = self.body_scope(sc, **{i: "n"})
            emit(f"for {i} in range({N}):")
            lines.append(pad + f"    {name}[{i}] = {self.S(b2, d + 1)}")
            sc.merge_from([b2])
            sc.add(name, Var("a"))

        def set_attrs():
            o = ch.elem(settable)
            self.mutate(sc, o)
            if sc.vars[o].attrs & set(KEYS):
                self.tags.add("attr_overwrite")
            k, t = self.loopvars("k", "t")
            b2 = self.body_scope(sc, **{k: "k", t: "s"})
            emit(f"for {k}, {t} in {self.D(sc, d)}.items():")
            lines.append(pad + f"    setattr({o}, {k}, {self.S(b2, d)})")
            sc.merge_from([b2])
            self.tags.update(("dict_view", "setattr"))
            sc.vars[o].attrs |= set(KEYS)

        def while_loop():
            acc = self.fresh("acc")
            cnt = self.fresh("n")
            emit(f"{acc} = {ch.elem(['0.0', 'y'])}")
            emit(f"{cnt} = 0")
            emit(f"while {cnt} < {N}:")
            body.add(acc, Var("s"))
            body.add(cnt, Var("n"))
            lines.append(pad + f"    {acc} = {acc} + {self.S(body, d + 1)}")
            lines.append(pad + f"    {cnt} += 1")
            sc.merge_from([body])
            sc.add(acc, Var("s"))

        opts = [
            (6, None, accumulate),
            (3, "loop_build_list", build_list),
            (2, "loop_build_dict", build_dict),
            (2, "loop_fill inplace_array", fill_array),
            (1, "while", while_loop),
        ]
        settable = self.mutable(sc, sc.of(
            "o", lambda v: self.ok("attr_overwrite") or not v.attrs & set(KEYS)))
        if settable:
            opts.append((1, "loop_setattr setattr dict_view", set_attrs))
        self.choose(opts)

    def _iter_header(self, sc, name):
        v = sc.vars[name]
        if v.used and not v.view:
            self.tags.add("iter_reuse")
        if not v.view:
            v.used = True
        if v.elem == "ff":
            return "p, q", name, {"p": "s", "q": "s"}, None
        if v.elem == "if":
            return "i, t", name, {"i": "n", "t": "s"}, None
        if v.elem == "kf":
            return "k, t", name, {"k": "k", "t": "s"}, None
        return "t", name, {"t": "s"}, None

    # the return ------------------------------------------------------------------------------
    def ret_expr(self, sc):
        ch = self.ch
        terms = []
        for name, v in sc.vars.items():
            if name == "x" and not ch.coin(30):
                continue
            if name in ("y",) and not ch.coin(30):
                continue
            if not ch.coin(75):
                continue
            if v.kind == "s":
                t = name
            elif v.kind == "a":
                t = f"np.sum({name})"
            elif v.kind == "l":
                t = f"sum({name})"
            elif v.kind == "d":
                t = f"sum({name}.values())"
            elif v.kind == "o" and v.attrs:
                t = " + ".join(f"{name}.{a}" for a in sorted(v.attrs))
                if len(v.attrs) > 1:
                    t = f"({t})"
            elif v.kind == "f":
                t = f"{name}(0.7)"
            elif v.kind == "i":
                t = self.consume_var(sc, 0, name)
            else:
                continue
            c = ch.elem(["", "0.5 * ", "-0.7 * ", "1.3 * "])
            terms.append(c + t)
        if not terms:
            last = [n for n, v in sc.vars.items() if v.kind == "s"]
            terms.append(last[-1])
        return " + ".join(terms)

    # whole programs ----------------------------------------------------------------------------
    def program(self):
        sc = Scope()
        sc.add("x", Var("a", argview=True))
        sc.add("y", Var("s"))
        body = []
        self.block(sc, self.max_depth, body, 1, first=True)
        body.append(f"    return {self.ret_expr(sc)}")
        helpers = [HELPERS[h] for h in HELPER_ORDER if h in self.used_helpers]
        parts = [HEADER] + helpers + ["def f(x, y):\n" + "\n".join(body) + "\n"]
        return "\n\n".join(p.rstrip("\n") + "\n" for p in parts)


def generate(chooser, exclude=frozenset(), **kw):
    g = Gen(chooser, exclude, **kw)
    src = g.program()
    return Program(src, g.tags, getattr(chooser, "trace", None))


def random_program(seed, exclude=frozenset(), **kw):
    return generate(RandomChooser(seed), exclude, **kw)


def replay_program(trace, exclude=frozenset(), **kw):
    return generate(ReplayChooser(trace), exclude, **kw)


def programs(exclude=frozenset(), **kw):
    """A Hypothesis strategy of :class:`Program`."""
    from hypothesis import strategies as st

    @st.composite
    def _programs(draw):
        return generate(HypothesisChooser(draw), exclude, **kw)
    return _programs()
