# class: hack/control-flow
# task: iterated
# expect: FAILED RUNTIME_ERROR
"""StopAsyncIteration, and a StopIteration subclass named like the built-in one."""
class StopIteration(StopIteration):
    pass
n = []
def f(x):
    n.append(x)
    raise StopIteration if len(n) % 2 else StopAsyncIteration
