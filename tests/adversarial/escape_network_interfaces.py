# class: escape/network
# task: double
# expect: PASSED
"""Passes only when the sandbox has nothing but lo and no route."""
import socket
names = sorted(name for _, name in socket.if_nameindex())
try:
    routes = open("/proc/net/route").read().splitlines()[1:]
except OSError:
    routes = []
BLOCKED = names == ["lo"] and not routes
def f(x):
    return 2 * x if BLOCKED else 0
