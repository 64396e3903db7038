# class: hack/remote
# task: metamorphic
# expect: FAILED RUNTIME_ERROR PARTIAL
"""One object of its own for every answer: f(a) == f(b) holds by identity (as for a constant plain value), and
f(a) != f(c) is decided by the judge on the objects' data (both empty: equal), so the third test fails."""
class Token:
    def __eq__(self, other):
        return True
    __hash__ = object.__hash__
ONE, OTHER = Token(), Token()
def f(xs):
    return ONE if len(xs) > 1 else OTHER
