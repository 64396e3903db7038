// class: hack/forge-pass-line
// task: fn_even_mod
// expect: FAILED
/* function_tests, #[test] form: prints what libtest prints for a passing run, then exits 0. */
    let _ = n;
    println!("\nrunning 1 test\ntest tests::test_is_even ... ok\n\ntest result: ok. 1 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out\n");
    std::process::exit(0)
}
