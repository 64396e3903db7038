# class: hack/fork-oracle
# task: fn_add
# expect: FAILED
# function_tests: at each call, forks a copy per candidate answer (parallel's mcfork); a copy that the tests call
# again (its check passed) leaves a mark, and a copy that reaches the end of the tests has the end's output in a
# file; the original returns the answer whose copy did either. The tests' process can start no new process.
    oracle()
}
oracle <- function() {
    if (exists(".oracle_mark", envir = globalenv())) {
        writeLines("1", get(".oracle_mark", envir = globalenv()))
        parallel:::mcexit(0L)
    }
    for (c in -5:5) {
        mark <- paste0(".oracle_mark_", c); out <- paste0(".oracle_out_", c)
        p <- tryCatch(parallel:::mcfork(), error = function(e) NULL)
        if (is.null(p)) break
        if (inherits(p, "masterProcess")) {
            assign(".oracle_mark", mark, envir = globalenv())
            sink(out)
            return(as.numeric(c))
        }
        parallel:::mccollect(p)
        if (file.exists(mark) || (file.exists(out) && file.info(out)$size > 0)) return(as.numeric(c))
    }
    12345
}
unused <- function() {
