// class: hack/neuter-assert
// task: fn_add
// expect: FAILED
/* function_tests: sets druntime's assertHandler (a failed assert then returns instead of throwing) from a module
   constructor and from inside the function, and answers wrong. */
{
    import core.exception : assertHandler;
    assertHandler = &ignore;
    return a - b;
}

void ignore(string file, size_t line, string msg) nothrow { }

shared static this() {
    import core.exception : assertHandler;
    assertHandler = &ignore;
}
