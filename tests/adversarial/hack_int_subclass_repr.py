# class: hack/subclass
# task: double
# expect: FAILED
"""An int subclass with a forged repr."""
class Int(int):
    def __repr__(self):
        return str(2 * self.k)
    def __eq__(self, other):
        return True
def f(x):
    v = Int(0)
    v.k = x
    return v
