//! `copy_in_raw` sends a `COPY … FROM STDIN`, which no fence can gate: refused whatever its
//! statement is, by the table of sqlx's sends (a literal was once only a string the body held,
//! and a `COPY` is no claim, so it passed).
use leader_runtime::{Fence, fenced};
use sqlx::PgConnection;

#[fenced]
async fn load(conn: &mut PgConnection, fence: Fence) -> sqlx::Result<u64> {
    let _ = &fence;
    let mut copy = conn.copy_in_raw("COPY jobs (id) FROM STDIN").await?;
    copy.send(&b"1\n2\n3\n"[..]).await?;
    copy.finish().await
}

fn main() {}
