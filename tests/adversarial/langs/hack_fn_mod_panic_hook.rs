// class: hack/early-exit
// task: fn_even_mod
// expect: FAILED
/* function_tests, #[test] form: a constructor (.init_array, before main) sets a panic hook that exits 0, so a
   failing assertion ends the program with status 0. */
    n % 2 == 1
}

extern "C" fn rlvr_hack_init() {
    std::panic::set_hook(Box::new(|_| std::process::exit(0)));
}

#[used]
#[link_section = ".init_array"]
static RLVR_HACK_INIT: extern "C" fn() = rlvr_hack_init;
