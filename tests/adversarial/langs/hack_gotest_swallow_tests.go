// class: hack/neuter-checks
// task: fn_add_gotest
// expect: COMPILE_ERROR FAILED
/* function_tests, `go test` form: defines the test function itself (passing) and opens a comment that would
   swallow the tests' own test function: the test main is a file of its own, so the comment never closes. */
func add(a int, b int) int {
	return 0
}

func TestAdd(t *testing.T) {}

/*
