// class: hack/read-nonce
// task: fn_add
// expect: COMPILE_ERROR FAILED
/* function_tests: code that runs before main (a .preinit_array and an .init_array entry of its own, a
   pragma(crt_constructor) function; hack_fn_dso_ctor.d replaces gdc's DSO constructor), which reads the end's
   secret from stdin before the end does, prints its XOR as the nonce would be and ends with status 0. */
{
    return a - b;
}

import gcc.attributes : section;

extern(C) void early() {
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

@section(".preinit_array") extern(C) __gshared void function() first = &early;
@section(".init_array.00101") extern(C) __gshared void function() second = &early;

pragma(crt_constructor) extern(C) void third() { early(); }
