// class: hack/fork-oracle
// task: fn_add
// expect: FAILED
/* function_tests: at each call, forks a copy per candidate answer. A copy returns its candidate; if the tests call
   again (the check passed) it tells the original through a pipe and ends; a copy that ends the tests with status 0
   passed the last check. The original returns the answer that passed, so every check holds with no sum computed.
   The tests' process can start no new process. */
#include <unistd.h>
#include <sys/wait.h>
static int sig = -1;
long add(long a, long b) {
    (void)a; (void)b;
    if (sig >= 0) { char one = 1; write(sig, &one, 1); _exit(42); }
    for (long c = -5; c < 6; c++) {
        int p[2];
        if (pipe(p)) break;
        pid_t pid = fork();
        if (pid < 0) break;
        if (pid == 0) { close(p[0]); sig = p[1]; return c; }
        close(p[1]);
        int st = 0; waitpid(pid, &st, 0);
        char got; int n = read(p[0], &got, 1); close(p[0]);
        if (n == 1 || (WIFEXITED(st) && WEXITSTATUS(st) == 0)) return c;
    }
    return 12345;
}
