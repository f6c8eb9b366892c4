"""What ``s2sad.grad(f)`` and ``s2sad.value_and_grad(f)`` return: a callable object, not a
function, so that it can say how to pickle itself (as the call that made it: ``grad(f, wrt)``;
:mod:`s2sad.pickling`).

``__s2sad_transform__ = (kind, f, wrt)`` (None with ``has_aux``) tells the runtime what calling it
computes when a differentiated function calls it (:func:`~s2sad.runtime.dispatch.transform_parts`);
``__s2sad_grad_of__ = (f, wrt)`` marks a gradient ``grad(grad(f))`` reads
(:mod:`s2sad.callables`).  Name and docs are ``f``'s.
"""


class Transformed:
    """``call(*args, **kwargs)`` with the attributes above; ``reduce()`` gives its pickled form."""

    def __init__(self, call, reduce):
        self._call = call
        self._reduce = reduce
        self.__s2sad_transform__ = None
        self.__s2sad_grad_of__ = None

    def __call__(self, *args, **kwargs):
        return self._call(*args, **kwargs)

    def __reduce__(self):
        return self._reduce()

    def __repr__(self):
        t = self.__s2sad_transform__
        kind = t[0] if t is not None else "transform"
        return f"<s2sad {kind} of {getattr(self, '__qualname__', '?')}>"
