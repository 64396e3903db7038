# class: hack/subclass
# task: io
# expect: FAILED
"""python_io: an int subclass with a wrong value that equals everything."""
class Int(int):
    def __eq__(self, other):
        return True
    __hash__ = int.__hash__
def f(x):
    return Int(0)
