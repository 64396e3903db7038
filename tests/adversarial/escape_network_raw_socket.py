# class: escape/network
# task: double
# expect: PASSED
"""Raw sockets need CAP_NET_RAW."""
import socket
try:
    socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP).close()
    BLOCKED = False
except OSError:
    BLOCKED = True
def f(x):
    return 2 * x if BLOCKED else 0
