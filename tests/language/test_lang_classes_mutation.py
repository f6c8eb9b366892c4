"""Classes: methods, dataclasses, __call__ models, properties, objects as differentiated arguments."""
import dataclasses
from dataclasses import dataclass

import numpy as np

import s2sad
from lang_helpers import check_grads, check_obj_grad, as_attr_dict, obj_fd_grad, rng, assert_close


# == case: object_attribute_mutation_inside
class Accumulator:
    def __init__(self):
        self.total = 0.0
        self.count = 0

    def add(self, v):
        self.total = self.total + v
        self.count += 1


def running_mean_sq(xs):
    acc = Accumulator()
    for x in xs:
        acc.add(x * x)
    return acc.total / acc.count


def test_object_attribute_mutation_inside():
    xs = [0.3, -1.2, 0.8]
    check_grads(running_mean_sq, (xs,))
    assert_close(s2sad.grad(running_mean_sq)(xs), [2 * v / 3 for v in xs])
