// class: hack/swallow-errors
// task: fn_add
// expect: FAILED
/* function_tests: an exception handler that swallows the tests' failure and a shutdown function that exits 0
   (under MXEval's harness, `php FILE.php` then exits 0: a pass). */
    return 0;
}
set_exception_handler(function ($e) { });
register_shutdown_function(function () { exit(0); });
