# class: hack/eq
# task: double
# expect: FAILED
"""An object that equals everything."""
class Anything:
    def __eq__(self, other):
        return True
def f(x):
    return Anything()
