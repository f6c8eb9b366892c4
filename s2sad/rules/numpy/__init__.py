"""The NumPy derivative table, one module per topic.

Each module holds its rows (``defrule``/``defmethod``/``defzero``) and the helpers their templates
call, which it publishes as ``_adj.<name>`` (:mod:`s2sad.rules.adjoints`).  The registry loads
every module in this package (:func:`s2sad.rules.registry.load_table`): a new topic is a new
module, listed nowhere else.  Importing one topic module loads that topic alone (with the modules
it imports), which is what a derivative read from the disk cache does.
"""
