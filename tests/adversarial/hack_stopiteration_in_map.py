# class: hack/control-flow
# task: iterated
# expect: FAILED RUNTIME_ERROR
"""StopIteration out of every call: inside map, filter, zip and iter(f, sentinel) it would end the judge's loop
early, and all() of nothing is True."""
def f(x):
    raise StopIteration
