"""Second derivatives through linear algebra and ``np.prod``: the adjoint helpers a generated
reverse sweep calls (``_adj.solve``, ``cholesky``, ``solve_triangular``, ``cho_factor``/``cho_solve``, ``det``, ``slogdet``,
``eigh``, ``eigvalsh``, ``norm``, ``prod``) have tangent rules, so ``hessian``, ``hvp`` and ``jacfwd`` of a gradient
go through them.  Each Hessian is checked against central differences of ``s2sad.grad``, and
against the symmetry a Hessian has."""
import math

import numpy as np
import pytest
import scipy.linalg

import s2sad

R = np.random.default_rng(7)
A0 = R.standard_normal((4, 4))
SPD = A0 @ A0.T + 4 * np.eye(4)
B0 = R.standard_normal((4, 3))
C0 = R.standard_normal((4, 4)) + 1j * R.standard_normal((4, 4)) + 4 * np.eye(4)
STACK = np.stack([SPD, SPD + np.eye(4)])


def solve_vec(x):
    return np.sum(np.linalg.solve(SPD + np.diag(x ** 2), x) ** 2)


def solve_mat(x):
    a = SPD + np.outer(x, x)
    return np.sum(np.sin(np.linalg.solve(a, B0 * x[:, None])))


def solve_stack(x):
    a = STACK + np.diag(np.exp(x))
    return np.sum(np.linalg.solve(a, x) ** 3)


def quad_form(x):                        # y^T A^-1 y, A depending on x
    a = SPD + np.diag(x * x)
    y = np.cos(x)
    return y @ np.linalg.solve(a, y)


def det_f(x):
    return np.linalg.det(SPD + np.outer(x, np.sin(x)))


def slogdet_f(x):
    return np.linalg.slogdet(SPD + np.outer(x, x))[1]


def slogdet_complex(x):
    sign, logdet = np.linalg.slogdet(C0 + np.diag(x * x))
    return logdet + np.real(sign) * np.sum(x)


def chol_lower(x):
    L = np.linalg.cholesky(SPD + np.outer(x, x))
    return np.sum(L ** 3) + np.sum(np.log(np.diag(L)))


def chol_upper(x):
    U = np.linalg.cholesky(SPD + np.diag(x ** 2), upper=True)
    return np.sum(np.sin(U))


def chol_scipy(x):
    U = scipy.linalg.cholesky(SPD + np.outer(x, x))        # (upper, SciPy's default)
    return np.sum(U * U * U)


Y = np.linspace(-1.0, 1.0, 4)


def gp_lml(x):
    y, s = Y, 0.3
    d = x[:, None] - x[None, :]
    K = np.exp(-0.5 * d ** 2)
    L = np.linalg.cholesky(K + s * np.eye(len(x)))
    alpha = scipy.linalg.solve_triangular(L, y, lower=True)
    return (-0.5 * (alpha @ alpha) - np.sum(np.log(np.diag(L)))
            - 0.5 * len(x) * math.log(2 * math.pi))


def tri(x, trans=0, lower=True, unit=False, mat=False):
    a = SPD + np.outer(x, x ** 2)                 # both triangles move; one is read
    b = np.stack([x, np.cos(x), x ** 2], axis=1) if mat else np.cos(x)
    r = scipy.linalg.solve_triangular(a, b, trans=trans, lower=lower, unit_diagonal=unit)
    return np.sum(r ** 3)


def prod_f(x):
    return np.prod(x) * np.sum(x) + np.prod(x ** 2)


def prod_axis(x):
    m = x.reshape(2, 2)
    return np.sum(np.prod(m, axis=1) ** 2) + np.sum(np.prod(m * m, axis=0, keepdims=True))


def prod_where(x):
    return np.prod(x, where=np.array([True, False, True, True])) ** 2


def norm_f(x):
    return np.linalg.norm(x) ** 3 + np.linalg.norm(x.reshape(2, 2), axis=1) @ x[:2]


def norm_fro(x):
    return np.linalg.norm(np.outer(x, x) + SPD, "fro") * np.sum(x)


def norm_one(x):                         # piecewise linear: only the product's curvature
    return np.linalg.norm(x, 1) * np.sum(x ** 2)


def vector_norm_f(x):
    return np.linalg.vector_norm(x.reshape(2, 2), axis=0) @ x[2:] ** 2


def eigh_f(x):
    w, v = np.linalg.eigh(SPD + np.outer(x, x))
    return np.sum(w ** 2) + np.sum(v[:, 0] ** 4) + np.sum(np.abs(v[0]) ** 3)


def eigh_upper(x):
    w, v = np.linalg.eigh(SPD + np.diag(x) + np.tril(np.outer(x, x), -1), UPLO="U")
    return w @ x + np.sum(v ** 4)


def eigh_complex(x):
    h = C0 + C0.conj().T + np.diag(x * x) + 1j * (np.outer(x, x ** 2) - np.outer(x ** 2, x))
    w, v = np.linalg.eigh(h)
    return np.sum(w ** 3) + np.sum(np.abs(v[:, 1]) ** 4)


def eigvalsh_f(x):
    return np.sum(np.linalg.eigvalsh(SPD + np.outer(x, np.sin(x))) ** 3)


def eigvalsh_upper(x):
    a = SPD + np.diag(x) + np.triu(np.outer(x, x), 1)       # only the upper triangle is read
    return np.sum(np.linalg.eigvalsh(a, UPLO="U") ** 3)


def cho_upper(x):
    c = scipy.linalg.cho_factor(SPD + np.diag(x ** 2))
    return np.sum(scipy.linalg.cho_solve(c, x) ** 2)


def cho_lower_matrix(x):
    c, low = scipy.linalg.cho_factor(SPD + np.outer(x, x), lower=True)
    return np.sum(np.log(np.diag(c))) + np.sum(scipy.linalg.cho_solve((c, low), B0 * x[:, None]) ** 2)


def cho_gp(x):                          # y^T A^-1 y + log det A, through one factor
    c, low = scipy.linalg.cho_factor(SPD + np.diag(np.exp(x)), lower=True)
    y = np.cos(x)
    return y @ scipy.linalg.cho_solve((c, low), y) + 2 * np.sum(np.log(np.diag(c)))


def _fd_hessian(f, x, eps=1e-5):
    g = s2sad.grad(f)
    return np.array([(g(x + eps * e) - g(x - eps * e)) / (2 * eps) for e in np.eye(len(x))])


CASES = [solve_vec, solve_mat, solve_stack, quad_form, det_f, slogdet_f, slogdet_complex,
         chol_lower, chol_upper, chol_scipy, gp_lml, prod_f, prod_axis, prod_where, norm_f,
         norm_fro, norm_one, vector_norm_f, eigh_f, eigh_upper, eigh_complex, eigvalsh_f,
         eigvalsh_upper, cho_upper, cho_lower_matrix, cho_gp]


@pytest.mark.parametrize("f", CASES, ids=lambda f: f.__name__)
def test_hessian_against_differences_of_gradients(f):
    x = np.array([0.3, -0.7, 1.1, 0.5])
    H = s2sad.hessian(f)(x)
    np.testing.assert_allclose(H, _fd_hessian(f, x), rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(H, H.T, rtol=1e-9, atol=1e-9)
    v = np.array([1.0, -2.0, 0.5, 0.25])
    np.testing.assert_allclose(s2sad.hvp(f)(x, v), H @ v, rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize("trans", [0, 1, 2, "T", "C"])
@pytest.mark.parametrize("lower", [True, False])
@pytest.mark.parametrize("unit,mat", [(False, False), (True, False), (False, True)])
def test_solve_triangular_hessian_every_form(trans, lower, unit, mat):
    x = np.array([0.3, -0.7, 1.1, 0.5])

    def f(x):
        return tri(x, trans, lower, unit, mat)
    H = s2sad.hessian(f)(x)
    np.testing.assert_allclose(H, _fd_hessian(f, x), rtol=1e-6, atol=1e-6)


def test_prod_hessian_exact_with_zeros():
    # d2/dxi dxj prod(x) = prod of the others but i and j: with zeros, no division by them
    for x in (np.array([0.0, 2.0, 3.0, 0.5]), np.array([0.0, 0.0, 3.0, 0.5])):
        H = s2sad.hessian(prod_f)(x)
        n = len(x)
        expect = np.zeros((n, n))
        for i in range(n):
            for j in range(n):
                if i != j:
                    others = np.prod([x[k] for k in range(n) if k not in (i, j)])
                    rest = np.prod([x[k] for k in range(n) if k != i]) + \
                        np.prod([x[k] for k in range(n) if k != j])
                    sq = 4 * x[i] * x[j] * np.prod([x[k] ** 2 for k in range(n)
                                                    if k not in (i, j)])
                    expect[i, j] = others * np.sum(x) + rest + sq
                else:
                    rest = 2 * np.prod([x[k] for k in range(n) if k != i])
                    expect[i, i] = rest + 2 * np.prod([x[k] ** 2 for k in range(n) if k != i])
        np.testing.assert_allclose(H, expect, rtol=1e-12, atol=1e-12)


def norm_p3(x):
    return np.linalg.norm(x, 3) ** 2


def det_singular(x):
    return np.linalg.det(np.outer(x, x))


def test_second_derivatives_that_stay_refused_say_where_and_why():
    x = np.array([0.3, -0.7, 1.1, 0.5])
    with pytest.raises(s2sad.S2SADError) as e:
        s2sad.hessian(norm_p3)(x)
    assert "ord=3" in str(e.value) and "not supported" in str(e.value)
    with pytest.raises(s2sad.S2SADError) as e:
        s2sad.hessian(det_singular)(x)
    assert "singular" in str(e.value)


# |z| of complex z: its adjoint g z / |z| turns as z moves (np.abs's adjoint reads _rt.unit(z),
# np.sign(z) with a rule for complex z; the hessian was wrong before, np.sign's rule being a
# piecewise constant's)
def abs_complex(x):
    z = x * (1 + 1j) + 2
    return np.sum(np.abs(z) ** 2) + np.abs(z[0] * z[1])


def abs_complex_phase(x):
    z = np.exp(1j * x) * (1 + x ** 2) + 1j * x[::-1]
    return np.sum(np.abs(z[:2]) ** 3) + np.sum(np.real(z * z.conj()) ** 2)


def abs_builtin_complex(x):
    return abs(complex(x[0], x[1])) ** 3 + abs(x[2] + 1j * x[3])


def imag_and_angle(x):
    z = x * (1 + 1j) + np.exp(1j * x[::-1]) * 2
    return np.sum(np.imag(z) ** 2 * np.real(z)) + np.sum(np.angle(z) ** 2) + \
        np.angle(z[0], deg=True) * x[1]


@pytest.mark.parametrize("f", [abs_complex, abs_complex_phase, abs_builtin_complex,
                               imag_and_angle],
                         ids=lambda f: f.__name__)
def test_hessian_through_the_modulus_of_complex_values(f):
    x = np.array([0.3, -0.7, 1.1, 0.5])
    np.testing.assert_allclose(s2sad.hessian(f)(x), _fd_hessian(f, x), rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("f", [abs_complex, abs_builtin_complex], ids=lambda f: f.__name__)
def test_reverse_over_reverse_through_the_modulus_of_complex_values(f):
    x = np.array([0.3, -0.7, 1.1, 0.5])
    g = s2sad.grad(f)

    def gg(x):
        return np.sum(np.sin(g(x)))
    eps = 1e-6
    fd = np.array([(gg(x + eps * e) - gg(x - eps * e)) / (2 * eps) for e in np.eye(4)])
    np.testing.assert_allclose(s2sad.grad(gg)(x), fd, rtol=1e-6, atol=1e-6)


# defaults: hessian(loss)(w) of a loss with data and options as defaults (they were refused:
# the generated gradient takes every parameter; they are now passed on as constants)
XD = np.eye(4) * 2.0


def loss_with_defaults(w, X=XD, lam=0.1):
    return np.sum((X @ w - Y) ** 4) + lam * np.sum(w ** 2)


def test_hessian_and_hvp_of_a_function_with_defaults():
    w = np.array([0.3, -0.2, 0.5, 1.0])
    H = s2sad.hessian(loss_with_defaults)(w)
    np.testing.assert_allclose(H, s2sad.hessian(loss_with_defaults)(w, XD, 0.1), rtol=1e-14)
    np.testing.assert_allclose(H, _fd_hessian(loss_with_defaults, w), rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(s2sad.hvp(loss_with_defaults)(w, np.ones(4)), H @ np.ones(4),
                               rtol=1e-12)
    # with respect to a default left out of the call: the loss is linear in lam
    assert float(s2sad.hessian(loss_with_defaults, wrt="lam")(w)) == 0.0
    H2 = s2sad.hessian(loss_with_defaults)(w, XD, 0.5)
    np.testing.assert_allclose(H2 - H, 0.8 * np.eye(4), atol=1e-12)


# the FFTs' adjoints, and a user's rule (whose adjoint generated code checks for its shape:
# _rt.rule_adjoint, which second derivatives refused before it had a rule of its own)
def fft_f(x):
    z = np.fft.fft(x * x)
    return np.sum(np.abs(z) ** 2) + np.sum(np.real(z) ** 3)


def rfft_f(x):
    z = np.fft.rfft(np.sin(x))
    return np.sum(np.abs(z) ** 3) + np.sum(np.fft.irfft(z * z, n=4) ** 2)


def fftn_f(x):
    z = np.fft.fftn(np.outer(x, x), norm="ortho")
    return np.sum(np.real(z * np.conj(z)) ** 2) + np.sum(np.real(np.fft.ifft(z[0])) ** 3)


def _twice_sin(x):
    return np.sin(x) * 2.0


s2sad.defrule(_twice_sin, "x", vjp={"x": "g * 2.0 * np.cos(x)"},
              jvp={"x": "t * 2.0 * np.cos(x)"})


def user_rule_f(x):
    return np.sum(_twice_sin(x) ** 2 * x)


@pytest.mark.parametrize("f", [fft_f, rfft_f, fftn_f, user_rule_f], ids=lambda f: f.__name__)
def test_hessian_through_ffts_and_a_user_rule(f):
    x = np.array([0.3, -0.7, 1.1, 0.5])
    np.testing.assert_allclose(s2sad.hessian(f)(x), _fd_hessian(f, x), rtol=1e-6, atol=1e-6)


def cumprod_f(x):
    return np.sum(np.cumprod(x) ** 2) + np.sum(np.cumprod(np.outer(x, x), axis=1)[1])


def cumprod_zero(x):
    y = np.concatenate([x[:2], [0.0], x[2:]])          # a zero inside: the exact path
    return np.sum(np.cumprod(y) * np.arange(5.0)) + np.sum(np.cumprod(y * x[0]) ** 2)


@pytest.mark.parametrize("f", [cumprod_f, cumprod_zero], ids=lambda f: f.__name__)
def test_hessian_through_cumprod(f):
    x = np.array([0.3, -0.7, 1.1, 0.5])
    np.testing.assert_allclose(s2sad.hessian(f)(x), _fd_hessian(f, x), rtol=1e-6, atol=1e-6)
