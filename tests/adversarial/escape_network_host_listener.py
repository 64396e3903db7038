# class: escape/network
# task: double
# expect: PASSED
"""Connects to a listener the test runs on the host's 127.0.0.1 ({PORT} is filled in)."""
import socket
try:
    socket.create_connection(("127.0.0.1", {PORT}), timeout=1).close()
    BLOCKED = False
except OSError:
    BLOCKED = True
def f(x):
    return 2 * x if BLOCKED else 0
