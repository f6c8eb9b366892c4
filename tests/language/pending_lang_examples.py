"""Realistic programs: integrators, recurrent cells, trees, models and training loops."""
import dataclasses
import functools

import numpy as np

import s2sad
from lang_helpers import check_grads, check_obj_grad, as_attr_dict, rng, assert_close


# == case: particles_dataclass_simulation
@dataclasses.dataclass
class Particle:
    pos: np.ndarray
    vel: np.ndarray
    mass: float


def simulate(particles, k, dt, steps):
    for _ in range(steps):
        center = sum(p.mass * p.pos for p in particles) / sum(p.mass for p in particles)
        for p in particles:
            force = -k * (p.pos - center)
            p.vel = p.vel + dt * force / p.mass
            p.pos = p.pos + dt * p.vel
    return sum(0.5 * p.mass * np.sum(p.vel ** 2) for p in particles)


def particle_energy(k, x0, v0):
    ps = [Particle(x0[i], v0[i], 1.0 + i) for i in range(len(x0))]
    return simulate(ps, k, 0.05, 8)


def test_particles_dataclass_simulation():
    r = rng(86)
    x0, v0 = r.standard_normal((3, 2)), r.standard_normal((3, 2))
    check_grads(particle_energy, (0.7, x0, v0), wrt=(0, 1, 2))
