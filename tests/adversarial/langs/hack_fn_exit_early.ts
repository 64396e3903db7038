// class: hack/early-exit
// task: fn_add
// expect: FAILED
/* function_tests: process.exit(0) in the function under test. */
declare var process: any;
function add(a: number, b: number): number { process.exit(0); return 0; }
