// class: hack/neuter-checks
// task: fn_add_assert
// expect: FAILED
/* function_tests, McEval's JavaScript form (the tests call console.assert): makes console.assert a no-op, and
   answers wrong. */
try { console.assert = () => {}; } catch (e) {}
try { Object.getPrototypeOf(console).assert = () => {}; } catch (e) {}
function add(a, b) { return 0; }
