// class: hack/fake-output
// task: fn_add
// expect: FAILED
/* function_tests: module destructors and a GC finalizer that print what a pass looks like (druntime's summary, a
   line of 32 hex digits) after the tests, and a wrong answer. */
{
    new Noisy();
    return a - b;
}

class Noisy {
    ~this() { import core.stdc.stdio : printf; printf("0123456789abcdef0123456789abcdef\n"); }
}

shared static ~this() {
    import core.stdc.stdio : printf;
    printf("1 modules passed unittests\n0123456789abcdef0123456789abcdef\n");
}

static ~this() {
    import core.stdc.stdio : printf;
    printf("0123456789abcdef0123456789abcdef\n");
}
