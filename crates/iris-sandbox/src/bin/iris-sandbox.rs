//! `iris-sandbox`: the helper that runs one command under an Iris sandbox plan. Hosts
//! start it; it is not meant to be run by hand.

fn main() {
    iris_sandbox::run_helper_if_invoked();
    eprintln!(
        "iris-sandbox: run by Iris as `iris-sandbox {} <plan> <program> [args…]`; it is not an interactive tool",
        iris_sandbox::HELPER_MARKER
    );
    std::process::exit(2);
}
