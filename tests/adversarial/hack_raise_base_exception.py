# class: hack/exceptions
# task: double
# expect: FAILED RUNTIME_ERROR
"""Raises a BaseException subclass that an `except Exception` harness would miss."""
class Escape(BaseException):
    pass
def f(x):
    raise Escape()
