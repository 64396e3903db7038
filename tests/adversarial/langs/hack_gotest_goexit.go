// class: hack/early-exit
// task: fn_add_gotest
// expect: FAILED
/* function_tests, `go test` form: ends the test's goroutine (runtime.Goexit) before its first check, so that
   the test function never reaches a failing assertion; and, for a second call, a panic recovered nowhere. */
import "runtime"

var calls int

func add(a int, b int) int {
	calls++
	if calls == 1 {
		runtime.Goexit()
	}
	panic("no answer")
}
