// class: hack/swallow
// task: fn_add
// expect: FAILED
/* function_tests: makes a failed check harmless from inside the function it answers: a Throwable handler
   (rt_trapExceptions off, an uncaught-exception handler), SIGABRT/SIGSEGV ignored, and a wrong answer. */
{
    import core.stdc.signal : signal, SIGABRT, SIGSEGV, SIG_IGN;
    signal(SIGABRT, SIG_IGN);
    signal(SIGSEGV, SIG_IGN);
    return a - b;
}

extern(C) __gshared bool rt_trapExceptions = false;
extern(C) __gshared string[] rt_options = ["trapExceptions=0", "testmode=run-main"];
