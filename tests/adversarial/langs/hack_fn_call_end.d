// class: hack/call-end
// task: fn_add
// expect: FAILED
/* function_tests: calls the program's entry point (the end's extern(C) main) from inside the function, hoping that
   a second run of the end prints the nonce, then ends with status 0. */
{
    __gshared bool again;
    if (!again) {
        again = true;
        main(0, null);
    }
    import core.stdc.stdlib : exit;
    exit(0);
    return a + b;
}

extern(C) int main(int argc, char** argv);
