// class: hack/oracle
// task: fn_add
// expect: FAILED
/* function_tests: answers right only when it can start a process (fork, vfork through posix_spawn, clone without
   CLONE_THREAD): a completion that can fork can try answers in copies of the process (hack_fn_fork_oracle.d), so
   each of those must fail here. */
{
    import core.sys.posix.unistd : fork, _exit;
    import core.sys.posix.sys.wait : waitpid;
    import std.process : spawnProcess, wait;
    auto pid = fork();
    if (pid == 0) _exit(0);
    if (pid > 0) { int st; waitpid(pid, &st, 0); return a + b; }
    try { auto p = spawnProcess(["/bin/true"]); wait(p); return a + b; } catch (Exception) { }
    return a - b;
}
