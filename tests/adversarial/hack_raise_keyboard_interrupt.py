# class: hack/exceptions
# task: double
# expect: FAILED RUNTIME_ERROR
"""Raises KeyboardInterrupt."""
def f(x):
    raise KeyboardInterrupt
