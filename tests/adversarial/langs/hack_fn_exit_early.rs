// class: hack/early-exit
// task: fn_add
// expect: FAILED
/* function_tests: std::process::exit(0) in the function under test. */
fn add(a: i64, b: i64) -> i64 { let _ = (a, b); std::process::exit(0) }
