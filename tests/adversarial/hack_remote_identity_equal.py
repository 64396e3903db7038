# class: hack/remote
# task: metamorphic
# expect: FAILED RUNTIME_ERROR
"""One object of its own for every answer: f(a) == f(b) would hold by identity, and f(a) != f(c) for another."""
class Token:
    def __eq__(self, other):
        return True
    __hash__ = object.__hash__
ONE, OTHER = Token(), Token()
def f(xs):
    return ONE if len(xs) > 1 else OTHER
