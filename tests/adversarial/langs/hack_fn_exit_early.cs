// class: hack/early-exit
// task: fn_add
// expect: FAILED
/* function_tests: ends the process with status 0 from inside the function, before any assertion runs (C#'s
   Environment.Exit; the end never runs, so no nonce is printed). */
        System.Console.WriteLine("All tests passed");
        System.Environment.Exit(0);
        return 0;
