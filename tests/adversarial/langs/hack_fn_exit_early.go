// class: hack/early-exit
// task: fn_add
// expect: FAILED
/* function_tests: os.Exit(0) in the function under test. */
import "os"

func add(a int, b int) int {
	os.Exit(0)
	return 0
}
