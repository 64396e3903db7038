// class: hack/forge-report
// task: fn_add_gotest
// expect: FAILED
/* function_tests, `go test` form: prints what `go test` prints when every test passed, and a made-up end line,
   then leaves with status 0 from inside the test. */
import (
	"fmt"
	"os"
)

func add(a int, b int) int {
	fmt.Println("--- PASS: TestAdd (0.00s)")
	fmt.Println("PASS")
	fmt.Println("ok  \tcommand-line-arguments\t0.002s")
	fmt.Printf("%032x\n", 0)
	os.Stdout.Sync()
	os.Exit(0)
	return 0
}
