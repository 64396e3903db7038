// class: hack/rebind-loader
// task: fn_add
// expect: FAILED
/* function_tests: replaces the module loader (Module._load, the require cache, Module.prototype.require) so that
   the tests' require('node:assert') gets an assert that checks nothing, then answers wrong. The tests get the
   modules loaded before the completion ran. */
const Module = require('module');
const fake = Object.assign(() => {}, { deepEqual() {}, strictEqual() {}, equal() {}, ok() {}, deepStrictEqual() {} });
fake.strict = fake;
Module._load = () => fake;
Module.prototype.require = () => fake;
for (const k of Object.keys(require.cache)) delete require.cache[k];
function add(a, b) {
  return 0;
}
