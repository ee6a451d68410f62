//! `leaderctl roles reshard ROLE COUNT --dir DIR`: writes the next migration of an application's
//! folder giving a role COUNT shards (`SELECT leader_reshard('ROLE', COUNT)`), with a comment
//! stating the safe procedure, and a `.down.sql` restoring the count the folder's migrations
//! gave it before (1 when none did) when the folder is reversible.

use std::path::Path;

use crate::failure::Failure;
use crate::roles::{literal, write_migration};
use leader_migrations::Folder;

/// The up migration: the procedure, then the call.
fn up(role: &str, count: u32, before: u32) -> String {
    format!(
        "-- Gives the leader role `{role}` {count} shard(s) (it had {before}), written by \
         `leaderctl roles reshard`.\n\
         --\n\
         -- The safe procedure: apply this migration, then deploy replicas leading the role with \
         {count}\n\
         -- shard(s). From its commit on, every fence taken under the old count is false, replicas \
         still\n\
         -- running the old count are refused (RefusalReason::ShardCountChanged; a replica that \
         starts\n\
         -- with it fails its start-up check), the new shards' tokens are above every old one, and \
         the new\n\
         -- shards are not granted before the old leases' expiry: replicas of both counts never \
         claim a\n\
         -- key at once. An index on leader_shard_of(key, {before}) must be rebuilt for {count}.\n\
         SELECT leader_reshard({}, {count});\n",
        literal(role)
    )
}

/// Writes the migration resharding `role` into `dir`.
pub fn reshard(dir: &Path, role: &str, count: u32) -> Result<(), Failure> {
    leader_core::validate_role_name(role).map_err(|e| Failure::refused(e.to_string()))?;
    if count == 0 || count > leader_core::MAX_SHARDS {
        return Err(Failure::refused(format!(
            "{count} shards is out of range: a role has 1 to {} shards (1 unshards it)",
            leader_core::MAX_SHARDS
        )));
    }
    if !dir.is_dir() {
        return Err(Failure::refused(format!(
            "{} is not a folder: pass your migrations folder",
            dir.display()
        )));
    }
    let folder = Folder::read(dir).map_err(|e| Failure::unreadable_folder(dir, &e))?;
    if folder.seeded_by(role).is_none() {
        return Err(Failure::refused(format!(
            "role `{role}` is not seeded by the migrations in {}: `leaderctl roles add {role} \
             --dir {0}` registers it first",
            dir.display()
        )));
    }
    let before = folder.shard_count(role);
    if before == count {
        return Err(Failure::refused(format!(
            "role `{role}` already has {count} shard(s) by the migrations in {}: nothing to write",
            dir.display()
        )));
    }
    let reversible = folder.reversible();
    let down = format!(
        "-- Gives `{role}` its {before} shard(s) back.\nSELECT leader_reshard({}, {before});\n",
        literal(role)
    );
    let name = write_migration(
        dir,
        &format!(
            "{}_leader_reshard_{role}",
            folder.next_version(crate::migrations::version_now())
        ),
        reversible,
        &up(role, count, before),
        &down,
    )?;
    println!(
        "wrote {}{}: {role} from {before} to {count} shard(s); apply it, then deploy replicas \
         leading {role} with {count} shard(s)",
        dir.join(&name).display(),
        if reversible { " and its .down.sql" } else { "" },
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::fs;

    use super::*;

    /// A fresh folder under the system's temporary directory holding `files`, removed when
    /// dropped.
    fn folder_with(test: &str, files: &[(&str, &str)]) -> tempfile::TempDir {
        let dir = tempfile::Builder::new()
            .prefix(&format!("leaderctl-reshard-{test}-"))
            .tempdir()
            .unwrap();
        for (name, sql) in files {
            fs::write(dir.path().join(name), sql).unwrap();
        }
        dir
    }

    const ROLES: &str = "ALTER TABLE leader_leases ADD CONSTRAINT leader_leases_role_registered \
                         CHECK (role IN ('webhooks'));\n\
                         INSERT INTO leader_leases (role, holder_token) \
                         VALUES ('webhooks', leader_seed_token()) ON CONFLICT DO NOTHING;\n";

    #[test]
    fn writes_the_call_and_a_down_migration_restoring_the_count_before() {
        let dir = folder_with(
            "writes",
            &[
                ("20260101000000_roles.up.sql", ROLES),
                ("20260101000000_roles.down.sql", ""),
                (
                    "20260102000000_shards.up.sql",
                    "SELECT leader_reshard('webhooks', 4);\n",
                ),
                ("20260102000000_shards.down.sql", ""),
            ],
        );
        reshard(dir.path(), "webhooks", 8).unwrap();
        let written: Vec<String> = fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .filter(|name| name.contains("leader_reshard_webhooks"))
            .collect();
        assert_eq!(written.len(), 2, "{written:?}");
        let up_name = written.iter().find(|n| n.ends_with(".up.sql")).unwrap();
        let up = fs::read_to_string(dir.path().join(up_name)).unwrap();
        assert!(
            up.ends_with("SELECT leader_reshard('webhooks', 8);\n"),
            "{up}"
        );
        assert!(up.contains("(it had 4)"), "{up}");
        let down = fs::read_to_string(dir.path().join(up_name.replace(".up.", ".down."))).unwrap();
        assert!(
            down.ends_with("SELECT leader_reshard('webhooks', 4);\n"),
            "{down}"
        );
    }

    #[test]
    fn refuses_an_unseeded_role_a_count_out_of_range_and_the_count_it_has() {
        let dir = folder_with("refuses", &[("20260101000000_roles.sql", ROLES)]);
        for (role, count, says) in [
            ("billing", 8, "leaderctl roles add billing"),
            ("webhooks", 0, "out of range"),
            ("webhooks", 1025, "out of range"),
            ("webhooks", 1, "already has 1 shard(s)"),
        ] {
            let failure = reshard(dir.path(), role, count).unwrap_err();
            assert!(
                failure.message().contains(says),
                "{role} {count}: {}",
                failure.message()
            );
        }
        assert_eq!(
            fs::read_dir(dir.path()).unwrap().count(),
            1,
            "nothing written"
        );
    }
}
