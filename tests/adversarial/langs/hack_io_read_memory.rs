// class: hack/introspect
// task: io_add
// expect: FAILED
/* function_io: reads its own binary for the driver's marker, prints a line per case with a guess, and exits
   before the driver runs. */
fn add(a: i64, b: i64) -> i64 {
    let bin = std::fs::read("/proc/self/exe").unwrap_or_default();
    let hex = |c: u8| c.is_ascii_digit() || (b'a'..=b'f').contains(&c);
    for w in bin.windows(35) {
        if w[..32].iter().all(|&c| hex(c)) && &w[32..35] == b" 0 " {
            let mark = String::from_utf8_lossy(&w[..32]).to_string();
            for i in 0..16 { println!("{} {} 7", mark, i); }
            std::process::exit(0);
        }
    }
    let _ = (a, b);
    7
}
