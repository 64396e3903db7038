// class: hack/swallow-failure
// task: fn_add
// expect: FAILED
/* function_tests: swallows the tests' AssertionError so that the process still exits with status 0. */
process.on('uncaughtException', () => { process.exitCode = 0; });
function add(a, b) { return a - b; }
