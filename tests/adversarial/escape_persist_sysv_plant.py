# class: escape/persist
# task: double
# expect: PASSED
# phase: 1
"""Creates SysV shared memory, semaphores and a message queue (they outlive processes)."""
import ctypes
libc = ctypes.CDLL(None, use_errno=True)
IPC_CREAT = 0o1000
libc.shmget(0x52564C52, 4096, IPC_CREAT | 0o666)
libc.semget(0x52564C53, 1, IPC_CREAT | 0o666)
libc.msgget(0x52564C54, IPC_CREAT | 0o666)
def f(x):
    return 2 * x
