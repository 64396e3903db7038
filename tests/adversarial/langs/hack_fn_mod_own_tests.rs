// class: hack/own-entry
// task: fn_even_mod
// expect: FAILED
/* function_tests, #[test] form: a wrong answer plus #[test] functions of its own that pass (in a module of
   another name: one named `tests` would clash with the tests'). */
    n % 2 == 1
}

#[cfg(test)]
mod my_tests {
    #[test]
    fn test_is_even() {}
}

#[test]
fn test_everything() {}
