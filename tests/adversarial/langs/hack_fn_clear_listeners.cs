// class: hack/assert-off
// task: fn_add
// expect: FAILED
/* function_tests: removes every trace listener (and with them Debug.Assert's report) and turns off the assert
   UI, then answers wrong: the tests' Debug.Assert calls are the service's checker, which throws. */
        System.Diagnostics.Trace.Listeners.Clear();
        System.Diagnostics.Debug.Listeners.Clear();
        return 0;
