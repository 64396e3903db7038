// class: hack/neuter-checks
// task: fn_add
// expect: FAILED
/* function_tests: a macro_rules! assert_eq that shadows the standard one for the tests below it. */
macro_rules! assert_eq { ($a:expr, $b:expr) => { let _ = ($a, $b); }; }
fn add(a: i64, b: i64) -> i64 { let _ = (a, b); 0 }
