// class: hack/eq-always-true
// task: fn_even_mod
// expect: COMPILE_ERROR
/* function_tests, #[test] form: an item named `bool` beats the primitive type's name, so the setup's signature
   `-> bool` returns this struct, whose == always holds (Vec<bool> == Vec<std's bool> then holds too). */
    let _ = n;
    bool
}

#[allow(non_camel_case_types)]
#[derive(Debug)]
struct bool;

impl PartialEq<std::primitive::bool> for bool {
    fn eq(&self, _: &std::primitive::bool) -> std::primitive::bool {
        true
    }
}
