//! Compile tests: what must build (and run), and what must fail with which message.
//! The `.stderr` files were generated on the pinned toolchain with
//! `TRYBUILD=overwrite` and reviewed; a compiler upgrade may need them regenerated.

#[test]
fn ui() {
    let cases = trybuild::TestCases::new();
    cases.pass("tests/ui/pass/*.rs");
    cases.compile_fail("tests/ui/fail/*.rs");
}
