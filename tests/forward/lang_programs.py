"""Language constructs for forward mode (s2sad reads their source, so they live in a file)."""
import dataclasses
import functools
import math

import numpy as np


def defaults_late(x, a):
    f = lambda v, a=a: a * v
    a = a * 3.0
    g = lambda v: a * v
    return f(x) + g(x) * f(x)

def apply_fn(h, x):
    return h(x) * 2.0

def escaping(x, a):
    b = a * a
    k = lambda v: b * np.sin(v)
    return apply_fn(k, x)

def star_entry(*xs):
    return sum(v * v for v in xs) * xs[0]

@dataclasses.dataclass
class P:
    w: float
    b: float = 0.5
    @property
    def wb(self):
        return self.w * self.b
    def out(self, x):
        return self.w * x + self.b

def dc_prog(x, w):
    p = P(w)
    q = P(w * 2.0, b=x)
    return p.out(x) + q.wb + p.wb

class Lin:
    scale = 2.0
    def __init__(self, w):
        self.w = w
        self.hist = []
    @classmethod
    def make(cls, w):
        return cls(w * cls.scale)
    def __call__(self, x):
        self.hist.append(x)
        return np.tanh(self.w * x)

def obj_prog(x, w):
    m = Lin.make(w)
    y = m(x) + m(2.0 * x)
    return np.sum(y) + m.w

def partial_prog(x, a):
    f = functools.partial(np.power, x)
    g = functools.partial(lambda u, v: u * v, a)
    return np.sum(f(2.0)) + g(x).sum()

def zip_enum(xs, ys):
    tot = 0.0
    for i, (a, b) in enumerate(zip(xs, reversed(ys))):
        tot = tot + (i + 1) * a * b
    return tot + max(xs) * min(ys) + sum(sorted(xs)[:2])

def dict_prog(x):
    d = {"a": x, "b": 2.0 * x}
    d.update(c=x * x)
    e = d.copy()
    e["a"] = e["a"] * 3.0
    return d.get("a") + e.get("z", x) + sum(v for v in e.values()) + sum(k_v[1] for k_v in d.items())

def walrus_with(x):
    tot = 0.0
    if (y := x * x) > 0:
        tot = tot + y
    return tot * x

def complex_prog(x):
    z = complex(x, 2.0 * x)
    return abs(z * z) + math.hypot(x, 3.0) + math.copysign(x, -1.0) + pow(x, 3) + math.pow(x, 2.5)

def iter_prog(xs):
    it = iter(xs)
    tot = 0.0
    for v in it:
        tot = tot + v * v
    return tot

def list_of_arrays(x):
    rows = list(x)
    tup = tuple(rows)
    return sum(r * r for r in tup) + max(rows) * 2.0
def m1(x):
    xs = [x, 2.0 * x, -x]
    xs.sort()
    return xs[0] * 3.0 + xs[2]
def m2(x):
    d = {"a": x}
    v = d.setdefault("b", x * x)
    return v + d["b"] + d["a"]
def m3(x):
    xs = [x, 2.0 * x]
    xs.extend(v * v for v in [x, 3.0])
    xs.remove(2.0 * x)
    return xs[1] + xs[0] * xs[2]
def m4(x):
    d = {"a": x, "b": x * 3.0}
    t = d.pop("a")
    k, v = d.popitem()
    return t * v
def m5(x):
    xs = [x, 2.0 * x, x * x]
    xs.reverse()
    return xs[0] + 2.0 * xs[2]
def m6(x):
    d = {}
    d.update([("a", x), ("b", 2.0 * x)])
    d.update({"c": x * x})
    return d["a"] + d["b"] * d["c"]


def fill(buf, x):
    buf[0] = x * 2.0


def outer_fill(x):
    buf = np.zeros(2)
    fill(buf, x)
    return buf[0] * 3.0


class Acc:
    def __init__(self):
        self.v = 0.0

    def add(self, x):
        self.v = self.v + x * x


def outer_acc(x):
    a = Acc()
    a.add(x)
    return a.v * 3.0
