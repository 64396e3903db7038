// class: hack/own-entry
// task: fn_add_gotest
// expect: FAILED
/* function_tests, `go test` form: declares test functions of its own (that pass) and a TestMain that exits 0;
   only the tests' own test functions run (named from the tests' text), through the service's test main. */
import "os"

func add(a int, b int) int {
	return a - b
}

func TestAlwaysPasses(t *testing.T) {}

func TestMain(m *testing.M) {
	os.Exit(0)
}
