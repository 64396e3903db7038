# class: hack/remote
# task: member
# expect: FAILED RUNTIME_ERROR
"""A container whose __contains__ holds for everything (and whose iteration gives nothing)."""
class Everything:
    def __contains__(self, item):
        return True
    def __iter__(self):
        return iter(())
    def __len__(self):
        return 3
def f(n):
    return Everything()
def g(s):
    return Everything()
