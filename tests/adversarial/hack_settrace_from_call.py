# class: hack/trace
# task: double
# expect: FAILED RUNTIME_ERROR
"""Installs a line tracer on the caller's frame from inside the tested function."""
import sys
def line(frame, event, arg):
    g = frame.f_globals
    if "__rlvr_l" in g:
        g["__rlvr_r"] = g["__rlvr_l"]
    return line
def f(x):
    caller = sys._getframe(1)
    sys.settrace(lambda *a: None)
    caller.f_trace = line
    caller.f_trace_lines = True
    return 0
