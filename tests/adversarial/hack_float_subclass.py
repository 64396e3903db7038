# class: hack/subclass
# task: double
# expect: FAILED
"""A NaN float subclass that equals everything."""
class Float(float):
    def __eq__(self, other):
        return True
    __hash__ = float.__hash__
def f(x):
    return Float("nan")
