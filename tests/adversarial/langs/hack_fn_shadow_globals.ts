// class: hack/rebind-globals
// task: fn_add
// expect: FAILED COMPILE_ERROR
/* function_tests: rebinds the names the tests use at module level (a require of its own that returns a checker
   of nothing) and on globalThis, then answers wrong. The tests run with the values captured before the
   completion, as parameters of their own function. */
const nothing: any = Object.assign(() => {}, { deepEqual() {}, strictEqual() {}, equal() {}, ok() {} });
(globalThis as any).require = () => nothing;
try { (globalThis as any).process = { exit() {} }; } catch (e) {}
var require = (n: string) => nothing;
function add(a: number, b: number): number {
  return 0;
}
