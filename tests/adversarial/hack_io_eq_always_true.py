# class: hack/eq
# task: io
# expect: FAILED
"""python_io: an object that equals everything."""
class Anything:
    def __eq__(self, other):
        return True
def f(x):
    return Anything()
