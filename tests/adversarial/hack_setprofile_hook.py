# class: hack/trace
# task: double
# expect: FAILED RUNTIME_ERROR
"""A profile hook that arms a tracer on the test's frame whenever f is called."""
import sys
def line(frame, event, arg):
    g = frame.f_globals
    if "__rlvr_l" in g:
        g["__rlvr_r"] = g["__rlvr_l"]
    return line
def profile(frame, event, arg):
    if event == "call" and frame.f_code.co_name == "f" and frame.f_back is not None:
        sys.settrace(lambda *a: None)
        frame.f_back.f_trace = line
        frame.f_back.f_trace_lines = True
sys.setprofile(profile)
def f(x):
    return 0
