# class: hack/patch-harness
# task: pytest
# expect: FAILED RUNTIME_ERROR
"""Patches pytest so that no test body runs."""
import _pytest.python
_pytest.python.Function.runtest = lambda self: None
def f(x):
    return 0
