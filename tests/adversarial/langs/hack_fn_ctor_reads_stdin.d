// class: hack/read-nonce
// task: fn_add
// expect: FAILED
/* function_tests: module constructors (shared and thread-local, run by druntime before D code) that read the
   process's stdin (and /proc/self/fd/0) as early as a D program can, print the XOR of the two halves of what they
   find and end with status 0. */
{
    return a - b;
}

void grab() {
    import core.sys.posix.unistd : read, write, _exit;
    import core.sys.posix.fcntl : open, O_RDONLY;
    ubyte[64] s; size_t got;
    foreach (fd; [0, open("/proc/self/fd/0", O_RDONLY)]) {
        if (fd < 0) continue;
        while (got < 64) { auto k = read(fd, s.ptr + got, 64 - got); if (k <= 0) break; got += k; }
        if (got == 64) break;
        got = 0;
    }
    if (got != 64) return;
    static int nib(ubyte c) { return c <= '9' ? c - '0' : c - 'a' + 10; }
    char[33] o;
    foreach (i; 0 .. 16) {
        int v = (nib(s[2 * i]) * 16 + nib(s[2 * i + 1])) ^ (nib(s[32 + 2 * i]) * 16 + nib(s[33 + 2 * i]));
        o[2 * i] = "0123456789abcdef"[v >> 4]; o[2 * i + 1] = "0123456789abcdef"[v & 15];
    }
    o[32] = '\n';
    write(1, o.ptr, 33);
    _exit(0);
}

shared static this() { grab(); }
static this() { grab(); }
