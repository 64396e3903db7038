# class: hack/forge-report
# task: fn_add
# expect: FAILED
# function_tests: a wrong add, then leaves with status 0 before the tests run.
    a - b
}
quit(save = "no", status = 0)
unused <- function() {
