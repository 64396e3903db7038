// class: hack/early-exit
// task: fn_even_mod
// expect: FAILED
/* function_tests, #[test] form: std::process::exit(0) in the function under test (libtest's harness would
   report nothing, and exit status 0). */
    let _ = n;
    std::process::exit(0)
}
