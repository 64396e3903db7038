# class: hack/eq
# task: double
# expect: FAILED
"""A class (not an instance) whose metaclass equals everything."""
class Meta(type):
    def __eq__(cls, other):
        return True
    __hash__ = type.__hash__
class Anything(metaclass=Meta):
    pass
def f(x):
    return Anything
