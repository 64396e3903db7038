# class: hack/eq
# task: stack
# expect: FAILED RUNTIME_ERROR PARTIAL
"""A class-based task: pop() returns an always-equal object."""
class Anything:
    def __eq__(self, other):
        return True
class Stack:
    def push(self, x):
        pass
    def pop(self):
        return Anything()
    def __len__(self):
        return 1
