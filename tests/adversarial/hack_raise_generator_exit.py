# class: hack/exceptions
# task: double
# expect: FAILED RUNTIME_ERROR
"""Raises GeneratorExit."""
def f(x):
    raise GeneratorExit
