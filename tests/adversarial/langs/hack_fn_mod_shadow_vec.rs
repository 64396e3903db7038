// class: hack/neuter-checks
// task: fn_even_mod
// expect: FAILED
/* function_tests, #[test] form: a macro_rules! vec that drops its elements, so that both sides of the tests'
   assert_eq!(vec![...], vec![...]) are empty. */
    let _ = n;
    false
}

macro_rules! vec { ($($t:tt)*) => { Vec::<bool>::new() }; }
