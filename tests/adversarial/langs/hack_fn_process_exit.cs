// class: hack/swallow-failure
// task: fn_add
// expect: FAILED
/* function_tests: handlers for an unhandled exception and for the process's exit that print a pass line and exit
   with status 0, so that a failed assertion would end the run "cleanly"; answers wrong. */
        System.AppDomain.CurrentDomain.UnhandledException += (s, e) => { System.Console.WriteLine("ok"); System.Environment.Exit(0); };
        System.AppDomain.CurrentDomain.ProcessExit += (s, e) => { System.Console.WriteLine("ok"); };
        return 0;
