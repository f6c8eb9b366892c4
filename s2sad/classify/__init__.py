"""Classification and the checks that run with it, one job per module.

The builders (``codegen/build.py``, ``codegen/build_forward.py``) run, in order:

* :func:`classify` (:mod:`.sites`): every call site becomes primitive, derived, zero, dynamic or
  opaque, and value kinds are inferred; views of a written array are bound again after the write
  (:func:`.writes.rederive_views`);
* activity analysis (``frontend/analysis.py``);
* :func:`finish` (:mod:`.after_activity`): sites with no argument that carries a derivative
  become inactive, and the refusal checks run: :func:`check_mutation` (:mod:`.mutation`: writes
  into arguments, through views or aliases) with :mod:`.iterators` (pending iterators, loop
  sources), :mod:`.lazy` (deferred readers, bound methods) and :mod:`.writes` (shared and
  augmented writes); :mod:`.keys` guards reads of a dict's keys;
* :func:`.closures.remake` and :func:`.closures.check`: closures whose captured state changes.

:mod:`.objects` is the may-point-to analysis the checks use; :mod:`.aliases` and :mod:`.common`
hold the helpers several checks share.
"""
from .after_activity import finish
from .aliases import defining_call
from .mutation import check_mutation
from .sites import classify, classify_call, site_description

__all__ = ["check_mutation", "classify", "classify_call", "defining_call", "finish",
           "site_description"]
