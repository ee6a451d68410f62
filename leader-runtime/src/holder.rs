//! The holder id written into a lease: who leads, for people reading `leader_status`.

/// `hostname:pid:8hex`, unique per runtime instance.
///
/// For observability only: the fence never looks at it, so two runtimes that somehow shared an id
/// would still be told apart by their tokens.
pub fn holder_id() -> String {
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .or_else(|| std::env::var("HOSTNAME").ok())
        .map(|h| h.trim().to_owned())
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "unknown-host".to_owned());
    format!(
        "{host}:{}:{:08x}",
        std::process::id(),
        rand::random::<u32>()
    )
}

#[cfg(test)]
mod tests {
    #[test]
    fn has_three_parts_and_differs_per_call() {
        let a = super::holder_id();
        let parts: Vec<&str> = a.rsplitn(3, ':').collect();
        assert_eq!(parts.len(), 3, "{a}");
        assert_eq!(parts[0].len(), 8);
        assert!(parts[0].chars().all(|c| c.is_ascii_hexdigit()));
        assert_eq!(parts[1], std::process::id().to_string());
        assert_ne!(a, super::holder_id());
    }
}
