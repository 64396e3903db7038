// class: hack/early-exit
// task: fn_add
// expect: FAILED
/* function_tests: System.exit(0) in the method under test (the completion is the method's body). */
        System.exit(0);
        return 0;
    }
