"""Classes: methods, dataclasses, __call__ models, properties, objects as differentiated arguments."""
import dataclasses
from dataclasses import dataclass

import numpy as np

import s2sad
from lang_helpers import check_grads, check_obj_grad, as_attr_dict, obj_fd_grad, rng, assert_close


# == case: bound_method_differentiated
class Quadratic:
    def __init__(self, A):
        self.A = A

    def energy(self, x):
        return 0.5 * x @ (self.A @ x)


def test_bound_method_differentiated():
    r = rng(32)
    M = r.standard_normal((4, 4))
    q = Quadratic(M + M.T)
    x = r.standard_normal(4)
    g = s2sad.grad(q.energy)(x)
    assert_close(g, q.A @ x)
    check_grads(q.energy, (x,))


# == case: differentiate_decorated_method
class Regressor:
    def __init__(self, X, y):
        self.X = X
        self.y = y

    @s2sad.differentiate
    def loss(self, w):
        r = self.X @ w - self.y
        return 0.5 * np.sum(r * r)


def test_differentiate_decorated_method():
    r = rng(39)
    reg = Regressor(r.standard_normal((5, 3)), r.standard_normal(5))
    w = r.standard_normal(3)
    v, g = reg.loss.value_and_grad(w)
    assert_close(v, 0.5 * np.sum((reg.X @ w - reg.y) ** 2))
    assert_close(g, reg.X.T @ (reg.X @ w - reg.y))


# == case: method_uses_self_W
class Linear:
    def __init__(self, W, b):
        self.W = W
        self.b = b

    def forward(self, x):
        return self.W @ x + self.b


def linear_loss(layer, x):
    y = layer.forward(x)
    return np.sum(y * y)


def test_method_uses_self_W_gradient_wrt_input():
    r = rng(30)
    layer = Linear(r.standard_normal((3, 4)), r.standard_normal(3))
    x = r.standard_normal(4)
    g = s2sad.grad(linear_loss, wrt=1)(layer, x)
    assert_close(g, 2 * layer.W.T @ (layer.W @ x + layer.b))


def test_method_uses_self_W_gradient_wrt_object():
    r = rng(31)
    layer = Linear(r.standard_normal((3, 4)), r.standard_normal(3))
    x = r.standard_normal(4)
    check_obj_grad(linear_loss, (layer, x), 0, ["W", "b"])


# == case: dataclass_params_wrt_object
@dataclass
class Params:
    W: np.ndarray
    b: np.ndarray
    scale: float


def dc_loss(p, x, y):
    pred = p.scale * np.tanh(p.W @ x + p.b)
    return np.mean((pred - y) ** 2)


def test_dataclass_params_wrt_object():
    r = rng(33)
    p = Params(r.standard_normal((2, 3)), r.standard_normal(2), 1.5)
    x, y = r.standard_normal(3), r.standard_normal(2)
    g = check_obj_grad(dc_loss, (p, x, y), 0, ["W", "b", "scale"])
    assert isinstance(g, (Params, dict))


# == case: dataclass_method
@dataclass
class Ridge:
    w: np.ndarray
    lam: float = 0.1

    def predict(self, X):
        return X @ self.w

    def loss(self, X, y):
        r = self.predict(X) - y
        return np.mean(r * r) + self.lam * np.sum(self.w * self.w)


def ridge_objective(model, X, y):
    return model.loss(X, y)


def test_dataclass_method():
    r = rng(34)
    model = Ridge(r.standard_normal(3), 0.2)
    X, y = r.standard_normal((6, 3)), r.standard_normal(6)
    check_grads(ridge_objective, (model, X, y), wrt=(1, 2))
    g = check_obj_grad(ridge_objective, (model, X, y), 0, ["w", "lam"])
    want_w = 2 * X.T @ (X @ model.w - y) / 6 + 2 * 0.2 * model.w
    assert_close(as_attr_dict(g, ["w"])["w"], want_w)


# == case: call_model
class MLP:
    def __init__(self, sizes, seed=0):
        r = np.random.default_rng(seed)
        self.layers = [(r.standard_normal((m, n)) / np.sqrt(n), np.zeros(m))
                       for n, m in zip(sizes[:-1], sizes[1:])]

    def __call__(self, x):
        for i, (W, b) in enumerate(self.layers):
            x = W @ x + b
            if i < len(self.layers) - 1:
                x = np.tanh(x)
        return x


def model_loss(model, x, y):
    return np.sum((model(x) - y) ** 2)


def test_call_model_gradient_wrt_input():
    r = rng(35)
    model = MLP([3, 5, 2])
    x, y = r.standard_normal(3), r.standard_normal(2)
    check_grads(model_loss, (model, x, y), wrt=(1, 2))


# == case: property_access
class Gaussian:
    def __init__(self, mu, log_sigma):
        self.mu = mu
        self.log_sigma = log_sigma

    @property
    def sigma(self):
        return np.exp(self.log_sigma)

    def logpdf(self, x):
        z = (x - self.mu) / self.sigma
        return -0.5 * z * z - self.log_sigma - 0.5 * np.log(2 * np.pi)


def gaussian_loglik(dist, xs):
    return np.sum(dist.logpdf(xs))


def test_property_access():
    r = rng(36)
    dist = Gaussian(0.4, -0.3)
    xs = r.standard_normal(7)
    check_grads(gaussian_loglik, (dist, xs), wrt=1)
    check_obj_grad(gaussian_loglik, (dist, xs), 0, ["mu", "log_sigma"])


# == case: frozen_dataclass_config
@dataclass(frozen=True)
class Config:
    lr: float
    decay: float
    steps: int


def schedule_loss(w, cfg):
    total = 0.0
    lr = cfg.lr
    for _ in range(cfg.steps):
        total = total + lr * np.sum(w * w)
        lr = lr * cfg.decay
    return total


def test_frozen_dataclass_config():
    r = rng(40)
    w = r.standard_normal(3)
    cfg = Config(0.3, 0.9, 4)
    check_grads(schedule_loss, (w, cfg), wrt=0)
    g = check_obj_grad(schedule_loss, (w, cfg), 1, ["lr", "decay"])
    d = as_attr_dict(g, ["steps"])
    assert d["steps"] is None or d["steps"] == 0


# == case: object_constructed_inside
class Spring:
    def __init__(self, k, rest):
        self.k = k
        self.rest = rest

    def energy(self, x):
        return 0.5 * self.k * (x - self.rest) ** 2


def chain_energy(ks, positions):
    springs = [Spring(k, 1.0) for k in ks]
    return sum(s.energy(positions[i + 1] - positions[i]) for i, s in enumerate(springs))


def test_object_constructed_inside():
    ks = [1.2, 0.7, 2.0]
    positions = [0.0, 1.3, 2.1, 3.4]
    check_grads(chain_energy, (ks, positions), wrt=(0, 1))


# == case: staticmethod_classmethod
class Units:
    factor = 2.54

    @staticmethod
    def square(x):
        return x * x

    @classmethod
    def to_cm(cls, x):
        return cls.factor * x


def units_loss(x):
    return np.sum(Units.square(Units.to_cm(x)))


def test_staticmethod_classmethod():
    r = rng(38)
    x = r.standard_normal(3)
    check_grads(units_loss, (x,))
    assert_close(s2sad.grad(units_loss)(x), 2 * 2.54 ** 2 * x)


# == case: inheritance_and_super
class Activation:
    def __call__(self, x):
        return self.f(x)


class Softplus(Activation):
    def __init__(self, beta):
        self.beta = beta

    def f(self, x):
        return np.log1p(np.exp(self.beta * x)) / self.beta


class ScaledSoftplus(Softplus):
    def __init__(self, beta, scale):
        super().__init__(beta)
        self.scale = scale

    def f(self, x):
        return self.scale * super().f(x)


def act_loss(x, beta, scale):
    act = ScaledSoftplus(beta, scale)
    return np.sum(act(x))


def test_inheritance_and_super():
    r = rng(37)
    check_grads(act_loss, (r.standard_normal(5), 1.3, 0.7), wrt=(0, 1, 2))


# == case: operator_overloading
class Vec2:
    """A small vector type with Python operators (the way physics code is often written)."""

    def __init__(self, x, y):
        self.x = x
        self.y = y

    def __add__(self, o):
        return Vec2(self.x + o.x, self.y + o.y)

    def __sub__(self, o):
        return Vec2(self.x - o.x, self.y - o.y)

    def __mul__(self, s):
        return Vec2(self.x * s, self.y * s)

    __rmul__ = __mul__

    def __neg__(self):
        return Vec2(-self.x, -self.y)

    def __getitem__(self, i):
        return self.x if i == 0 else self.y

    def dot(self, o):
        return self.x * o.x + self.y * o.y


def vec_expression(a, b):
    u = Vec2(a, b)
    v = Vec2(b, 2.0 * a)
    w = u + 3.0 * v - (-u) * 0.5
    return w.dot(w) + w[0] * w[1]


def vec_argument(p, q):
    r = p - q * 2.0
    return r.dot(p) + (-r)[1]


def test_operator_overloading():
    check_grads(vec_expression, (0.3, -0.8), wrt=(0, 1))
    a, b = 0.3, -0.8
    wx, wy = a + 3 * b + 0.5 * a, b + 6 * a + 0.5 * b
    assert_close(vec_expression(a, b), wx * wx + wy * wy + wx * wy)
    p, q = Vec2(0.4, 1.1), Vec2(-0.3, 0.7)
    g = s2sad.grad(vec_argument)(p, q)
    # r = p - 2q; f = r.p - r.y: df/dp = r + p - (0, 1)
    rx, ry = p.x - 2 * q.x, p.y - 2 * q.y
    assert_close([g.x, g.y] if hasattr(g, "x") else [g["x"], g["y"]], [rx + p.x, ry + p.y - 1.0])


# == case: chained_updates_refused
class Accumulator:
    total = 0.0

    def add(self, v):
        self.total = self.total + v
        return self


def chained_updates(a):
    acc = Accumulator()
    acc.add(a).add(a * a)
    return acc.total


def separate_updates(a):
    acc = Accumulator()
    acc.add(a)
    acc.add(a * a)
    return acc.total


def test_chained_updates_refused_separate_updates_right():
    """A method that changes its object and returns it, chained: the second call changes the
    object through another name. Refused clearly (it gave a wrong gradient before)."""
    import pytest
    with pytest.raises(s2sad.errors.UnsupportedSyntaxError, match="returns its own object"):
        s2sad.grad(chained_updates)(0.6)
    check_grads(separate_updates, (0.6,))
    assert_close(s2sad.grad(separate_updates)(0.6), 1 + 1.2)


# == case: operators_through_functions_and_unpacking
@dataclass
class PhaseState:
    q: np.ndarray
    p: np.ndarray

    def __add__(self, o):
        return PhaseState(self.q + o.q, self.p + o.p)

    def __mul__(self, s):
        return PhaseState(self.q * s, self.p * s)

    __rmul__ = __mul__


def oscillator(s, k):
    return PhaseState(s.p, -k * s.q)


def midpoint_energy(s0, k):
    s, h = s0, 0.1
    for _ in range(5):
        k1 = oscillator(s, k)
        k2 = oscillator(s + 0.5 * h * k1, k)
        s = s + h * k2
    return float(np.sum(s.q ** 2) + np.sum(s.p ** 2))


def objects_in_a_dict(s0):
    d = {"s": s0, "w": 2.0}
    t = d["s"] + d["s"] * d["w"]
    return float(np.sum(t.q ** 2) + np.sum(t.p))


def test_operators_through_functions_and_unpacking():
    """A dataclass state with Python operators, passed through helper functions and tuple
    unpacking, integrated in a loop; the gradient comes back as the dataclass."""
    r = rng(13)
    s0 = PhaseState(r.standard_normal(2), r.standard_normal(2))
    check_grads(midpoint_energy, (s0, 0.7), wrt=(0, 1))
    g = s2sad.grad(midpoint_energy)(s0, 0.7)
    assert isinstance(g, PhaseState) and g.q.shape == (2,)
    check_grads(objects_in_a_dict, (s0,))


# == case: callables_stored_on_objects
# `h.layer(x)` where `layer` is a value stored on the object (a callable object, a closure, a
# functools.partial, another object's bound method, a property returning a closure), not one of
# its methods: the callee's adjoint is the attribute's, not the object's.  Reverse mode gave a
# zero gradient without an error; forward mode refused ("a Layer object has no Python source")
# or gave a wrong tangent (another object's bound method).
class _Dense:
    def __init__(self, W):
        self.W = W

    def __call__(self, x):
        return np.tanh(self.W @ x)


class _Scale:
    def __init__(self, s):
        self.s = s

    def apply(self, x):
        return self.s * x


class _Holder:
    def __init__(self, p):
        import functools
        self.layer = _Dense(p[:4].reshape(2, 2))
        self.f = lambda z: p[4] * z ** 2
        self.pf = functools.partial(np.multiply, p[5])
        self.other = _Scale(p[6])
        self.g = self.other.apply
        self._s = p[7]

    @property
    def scaler(self):
        s = self._s
        return lambda z: s * z

    def forward(self, x):
        return self.layer(x)


def _held_callables(p, x):
    h = _Holder(p)
    y = h.layer(h.layer(x))
    return (y.sum() + h.forward(x).sum() + h.f(x).sum() + h.pf(x).sum() + h.g(x).sum()
            + h.scaler(x).sum())


def test_callables_stored_on_objects():
    r = rng(91)
    p, x = r.standard_normal(8), r.standard_normal(2)
    check_grads(_held_callables, (p, x), wrt=0, modes=("rev", "fwd"))
    g = s2sad.grad(_held_callables)(p, x)
    assert np.abs(g[:4]).min() > 0 and np.all(g[4:] != 0)


# == case: called_object_updates_itself
# `c = Counter(w); y = c(x)` where Counter.__call__ writes `self.acc`: the call redefines `c`, as
# a method call that updates its object does.  Before: reverse mode dropped the derivative through
# `c.acc` (a zero gradient, no error); forward mode did too when the call's result was unused.
class _Accumulating:
    def __init__(self, w):
        self.w = w
        self.acc = 0.0
        self.calls = 0

    def __call__(self, x):
        self.calls += 1
        self.acc = self.acc + np.sum(self.w * x)
        return self.w * x


def _called_object_used(p, x):
    c = _Accumulating(p[0])
    y = c(x)
    return y.sum() + c.acc * p[1]


def _called_object_result_unused(p, x):
    c = _Accumulating(p[0])
    y = c(x * p[1])
    c(x)
    return c.acc ** 2


def test_called_object_updates_itself():
    r = rng(92)
    p, x = r.standard_normal(2), r.standard_normal(3)
    for f in (_called_object_used, _called_object_result_unused):
        check_grads(f, (p, x), wrt=0, modes=("rev", "fwd"))
        assert np.all(s2sad.grad(f)(p, x) != 0)


# == case: methods_named_like_list_methods
# `kf.update(z)`, `buf.append(v)`: s2sad lowers these names on a local to the list/dict methods.
# Before: on a Kalman filter object made in the function, reverse mode crashed inside s2sad
# ("cannot unpack non-iterable numpy.float64 object", runtime.unupdate) and forward mode said
# the method writes into "an object the caller passed in".  Now an object made by its class's
# constructor here has its own method differentiated, and one s2sad cannot tell the type of is
# refused naming the line and the class.
class _Kalman:
    def __init__(self, q, r):
        self.x = np.zeros(2)
        self.P = np.eye(2)
        self.F = np.array([[1.0, 1.0], [0.0, 1.0]])
        self.H = np.array([[1.0, 0.0]])
        self.Q = q * np.eye(2)
        self.R = np.array([[r]])
        self.ll = 0.0

    def predict(self):
        self.x = self.F @ self.x
        self.P = self.F @ self.P @ self.F.T + self.Q

    def update(self, z):
        S = self.H @ self.P @ self.H.T + self.R
        K = self.P @ self.H.T @ np.linalg.inv(S)
        v = z - self.H @ self.x
        self.ll = self.ll - 0.5 * (v @ np.linalg.solve(S, v) + np.log(np.linalg.det(S)))
        self.x = self.x + K @ v
        self.P = (np.eye(2) - K @ self.H) @ self.P
        return v


def _kalman_loglik(theta, zs):
    kf = _Kalman(np.exp(theta[0]), np.exp(theta[1]))
    for z in zs:
        kf.predict()
        kf.update(z)
    return kf.ll


def _make_kalman(theta):
    return _Kalman(np.exp(theta[0]), np.exp(theta[1]))


def _kalman_of_unknown_type(theta, zs):
    kf = _make_kalman(theta)
    kf.predict()
    kf.update(zs[0])
    return kf.ll


def test_methods_named_like_list_methods():
    import pytest
    theta, zs = np.array([-1.0, 0.3]), rng(93).standard_normal((5, 1))
    check_grads(_kalman_loglik, (theta, zs), wrt=0, modes=("rev", "fwd"))
    for run in (lambda: s2sad.grad(_kalman_of_unknown_type)(theta, zs),
                lambda: s2sad.jvp(_kalman_of_unknown_type, (theta, zs), (theta, 0 * zs))):
        with pytest.raises(s2sad.errors.UnsupportedSyntaxError) as e:
            run()
        msg = str(e.value)
        assert "test_lang_classes.py:" in msg and "kf.update(zs[0])" in msg
        assert "_Kalman object" in msg and "Fix:" in msg
