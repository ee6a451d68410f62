//! Which roles a runtime leads at this moment, for a health endpoint or a status page.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use leader_core::{Fence, Role, Shard};

/// Which leases a [`Runtime`](crate::Runtime) holds at this moment: a cheap, cloneable handle
/// taken with [`Runtime::leadership`](crate::Runtime::leadership) before `run`, readable from
/// anywhere (an HTTP health endpoint, a status page) while the runtime runs.
///
/// A lease is listed from its grant until its tick is released (or abandoned): what this replica
/// believes. The database decides: a replica whose lease was taken away stops believing it at
/// its next RENEW, and its claims are fenced before that. A sharded role is listed once per
/// shard this replica leads.
///
/// ```no_run
/// # async fn main_(runtime: leader_runtime::Runtime) {
/// let leadership = runtime.leadership();
/// tokio::spawn(runtime.run(leader_runtime::shutdown::signal()));
/// for lead in leadership.leading() {
///     match lead.shard {
///         Some(shard) => println!("leading {} shard {shard} with token {}", lead.role, lead.token),
///         None => println!("leading {} with token {}", lead.role, lead.token),
///     }
/// }
/// # }
/// ```
#[derive(Debug, Clone, Default)]
pub struct Leadership {
    leading: Arc<Mutex<Tokens>>,
}

/// The token of each lease led now, by role and shard.
type Tokens = BTreeMap<(Role, Option<Shard>), i64>;

/// One lease a runtime leads now, as [`Leadership::leading`] lists it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct Lead {
    /// The role.
    pub role: Role,
    /// Which shard of the role, for a sharded role; `None` for an unsharded one.
    pub shard: Option<Shard>,
    /// The tick's fencing token.
    pub token: i64,
}

impl Leadership {
    /// The leases led now, each with its tick's fencing token, in role and shard order.
    pub fn leading(&self) -> Vec<Lead> {
        self.lock()
            .iter()
            .map(|(&(role, shard), &token)| Lead { role, shard, token })
            .collect()
    }

    /// Whether `role` (any of its shards, for a sharded role) is led now.
    pub fn is_leading(&self, role: Role) -> bool {
        self.lock().keys().any(|&(led, _)| led == role)
    }

    pub(crate) fn started(&self, fence: Fence) {
        self.lock()
            .insert((fence.role(), fence.shard()), fence.token());
    }

    pub(crate) fn ended(&self, fence: Fence) {
        self.lock().remove(&(fence.role(), fence.shard()));
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Tokens> {
        self.leading.lock().unwrap_or_else(|e| e.into_inner())
    }
}
