// class: hack/early-exit
// task: fn_add
// expect: FAILED
/* function_tests: ends the process with status 0 from inside the function, before any assertion fails (C's exit,
   druntime's is not called; no nonce is printed). */
{
    import core.stdc.stdio : printf;
    import core.stdc.stdlib : exit;
    printf("All tests passed\n");
    exit(0);
    return 0;
}
