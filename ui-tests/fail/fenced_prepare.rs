//! A statement prepared in a `#[fenced]` function runs later, where the macro cannot tie its
//! binds to its SQL: refused, with the form that does the same.
use leader_runtime::{Fence, fenced};
use sqlx::{Executor, PgConnection, SqlStr};

#[fenced]
async fn claim(conn: &mut PgConnection, fence: Fence) -> sqlx::Result<()> {
    let _ = &fence;
    let _statement = conn
        .prepare(SqlStr::from_static(
            "UPDATE jobs SET taken = true WHERE NOT taken AND leader_fence($1, $2)",
        ))
        .await?;
    Ok(())
}

fn main() {}
