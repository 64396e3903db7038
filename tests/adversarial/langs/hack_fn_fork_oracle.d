// class: hack/oracle
// task: fn_add
// expect: FAILED
/* function_tests: a fork oracle. At each call it tries answers in forked copies of the process: a copy returns the
   candidate and lets the tests go on; a copy that is called again (its answer passed the check after it) or that
   ends with status 0 (its tests ran to their end) says the candidate was right, and the parent returns it. When no
   candidate is found (the last check: no later call tells) it answers wrong. */
{
    import core.sys.posix.unistd : fork, _exit, pipe, write, read, close;
    import core.sys.posix.sys.wait : waitpid;
    __gshared int signalFd = -1;
    if (signalFd >= 0) { ubyte one = 1; write(signalFd, &one, 1); _exit(42); }
    foreach (long c; -5 .. 6) {
        int[2] p;
        if (pipe(p) != 0) break;
        auto pid = fork();
        if (pid == 0) { close(p[0]); signalFd = p[1]; return c; }
        close(p[1]);
        int status;
        waitpid(pid, &status, 0);
        ubyte got;
        auto n = read(p[0], &got, 1);
        close(p[0]);
        bool exited0 = (status & 0x7f) == 0 && ((status >> 8) & 0xff) == 0;
        if (n == 1 || exited0) return c;
    }
    return 12345;
}
