"""Import examples/gpu_attention.py as a module (the examples folder is not a package)."""
import importlib.util
import os

_PATH = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
                     "examples", "gpu_attention.py")


def load():
    spec = importlib.util.spec_from_file_location("gpu_attention_example", _PATH)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod
