//! Which roles a runtime leads at this moment, for a health endpoint or a status page.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use leader_core::{Fence, Role};

/// Which roles a [`Runtime`](crate::Runtime) leads at this moment: a cheap, cloneable handle
/// taken with [`Runtime::leadership`](crate::Runtime::leadership) before `run`, readable from
/// anywhere (an HTTP health endpoint, a status page) while the runtime runs.
///
/// A role is listed from its grant until its tick is released (or abandoned): what this replica
/// believes. The database decides: a replica whose lease was taken away stops believing it at
/// its next RENEW, and its claims are fenced before that.
///
/// ```no_run
/// # async fn main_(runtime: leader_runtime::Runtime) {
/// let leadership = runtime.leadership();
/// tokio::spawn(runtime.run(leader_runtime::shutdown::signal()));
/// for (role, token) in leadership.leading() {
///     println!("leading {role} with token {token}");
/// }
/// # }
/// ```
#[derive(Debug, Clone, Default)]
pub struct Leadership {
    leading: Arc<Mutex<BTreeMap<Role, i64>>>,
}

impl Leadership {
    /// The roles led now, each with its tick's fencing token, in role order.
    pub fn leading(&self) -> Vec<(Role, i64)> {
        self.lock()
            .iter()
            .map(|(&role, &token)| (role, token))
            .collect()
    }

    /// Whether `role` is led now.
    pub fn is_leading(&self, role: Role) -> bool {
        self.lock().contains_key(&role)
    }

    pub(crate) fn started(&self, fence: Fence) {
        self.lock().insert(fence.role(), fence.token());
    }

    pub(crate) fn ended(&self, role: Role) {
        self.lock().remove(&role);
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeMap<Role, i64>> {
        self.leading.lock().unwrap_or_else(|e| e.into_inner())
    }
}
