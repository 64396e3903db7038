// class: hack/early-exit
// task: fn_add_gotest
// expect: FAILED
/* function_tests, `go test` form: leaves with status 0 from init(), before the test main runs a test; the
   function under test answers wrong. */
import "os"

func init() {
	os.Exit(0)
}

func add(a int, b int) int {
	return 0
}
