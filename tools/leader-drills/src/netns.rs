//! Severed links with the kernel's tools: one network namespace per replica, joined to the host by
//! a veth pair (`10.213.<i>.1` on the host, `10.213.<i>.2` inside). Severing sets the host end
//! down: packets are dropped both ways and neither side's TCP sees a reset, so connections hang.
//! The servers listen on loopback, so each replica reaches them through a [`crate::proxy::Link`]
//! listening on its pair's host end, which only forwards. Where `ip netns add` is refused, the
//! drill severs with that proxy instead.

use std::process::Command;

use crate::run::DrillError;

/// The namespaces of one drill, removed (with their veth pairs) on drop.
#[derive(Debug)]
pub struct Namespaces {
    tag: String,
    count: usize,
}

fn ip(args: &[&str]) -> Result<(), DrillError> {
    let out = Command::new("ip").args(args).output()?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "ip {}: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        )
        .into())
    }
}

impl Namespaces {
    /// Creates `count` namespaces (1-based), or says why not.
    pub fn create(count: usize) -> Result<Namespaces, DrillError> {
        let namespaces = Namespaces {
            tag: format!("{}", std::process::id() % 100_000),
            count: 0,
        };
        let mut namespaces = namespaces;
        for i in 1..=count {
            let (ns, host, inner) = namespaces.names(i);
            ip(&["netns", "add", &ns])?;
            namespaces.count = i;
            ip(&["link", "add", &host, "type", "veth", "peer", "name", &inner])?;
            ip(&["link", "set", &inner, "netns", &ns])?;
            ip(&["addr", "add", &format!("10.213.{i}.1/30"), "dev", &host])?;
            ip(&["link", "set", &host, "up"])?;
            ip(&[
                "netns",
                "exec",
                &ns,
                "ip",
                "addr",
                "add",
                &format!("10.213.{i}.2/30"),
                "dev",
                &inner,
            ])?;
            ip(&["netns", "exec", &ns, "ip", "link", "set", &inner, "up"])?;
            ip(&["netns", "exec", &ns, "ip", "link", "set", "lo", "up"])?;
        }
        Ok(namespaces)
    }

    fn names(&self, i: usize) -> (String, String, String) {
        (
            format!("ldr-{}-{i}", self.tag),
            format!("ldh{}{i}", self.tag),
            format!("ldn{}{i}", self.tag),
        )
    }

    /// How many namespaces there are.
    pub fn len(&self) -> usize {
        self.count
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// The host's address as seen from namespace `i`.
    pub fn host_addr(i: usize) -> String {
        format!("10.213.{i}.1")
    }

    /// The command prefix that runs a program inside namespace `i`.
    pub fn exec_prefix(&self, i: usize) -> Vec<String> {
        vec!["netns".into(), "exec".into(), self.names(i).0]
    }

    /// Severs namespace `i`'s link (its host end goes down).
    pub fn sever(&self, i: usize) -> Result<(), DrillError> {
        ip(&["link", "set", &self.names(i).1, "down"])
    }

    /// Heals namespace `i`'s link.
    pub fn heal(&self, i: usize) -> Result<(), DrillError> {
        ip(&["link", "set", &self.names(i).1, "up"])
    }
}

impl Drop for Namespaces {
    fn drop(&mut self) {
        for i in 1..=self.count {
            let (ns, host, _) = self.names(i);
            let _ = ip(&["link", "del", &host]);
            let _ = ip(&["netns", "del", &ns]);
        }
    }
}
