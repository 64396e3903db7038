# class: hack/control-flow
# task: iterated
# expect: FAILED RUNTIME_ERROR
"""Right on the first call, then StopIteration (with the right value as its value)."""
calls = []
def f(x):
    calls.append(x)
    if len(calls) == 1:
        return 2 * x
    raise StopIteration(2 * x)
