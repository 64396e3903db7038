// class: escape/isolation
// task: escape
// expect: PASSED
/* The languages image, from Rust: only the loopback interface, no write outside the scratch dirs. */
fn main() {
    let mut leaks: Vec<String> = Vec::new();
    let dev = std::fs::read_to_string("/proc/net/dev").unwrap_or_default();
    for line in dev.lines().skip(2) {
        let name = line.split(':').next().unwrap_or("").trim();
        if !name.is_empty() && name != "lo" {
            leaks.push(format!("interface {}", name));
        }
    }
    for p in ["/opt/rlvr-langs/x", "/usr/lib/rustlib/x", "/x", "/opt/rlvr/x", "/etc/x"] {
        if std::fs::File::create(p).is_ok() {
            leaks.push(format!("wrote {}", p));
        }
    }
    println!("{}", if leaks.is_empty() { "held".to_string() } else { leaks.join(", ") });
}
