# class: hack/remote
# task: member
# expect: FAILED RUNTIME_ERROR
"""A container with only __contains__ (always true) and a __getitem__ that answers anything."""
class Everything:
    def __contains__(self, item):
        return True
    def __getitem__(self, i):
        raise IndexError
def f(n):
    return Everything()
def g(s):
    return Everything()
