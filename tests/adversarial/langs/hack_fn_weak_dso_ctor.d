// class: hack/read-nonce
// task: fn_add
// expect: FAILED COMPILE_ERROR
/* function_tests: a weak gdc.dso_ctor of its own in place of the compiler's (every D object's init array calls it
   before main), which reads the end's secret from stdin first and prints its XOR as the nonce would be. */
{
    return a - b;
}

import gcc.attributes : weak, section;

@weak pragma(mangle, "gdc.dso_ctor") extern(C) void early() {
    import core.sys.posix.unistd : read, write, _exit;
    ubyte[64] s; size_t got;
    while (got < 64) { auto k = read(0, s.ptr + got, 64 - got); if (k <= 0) break; got += k; }
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
