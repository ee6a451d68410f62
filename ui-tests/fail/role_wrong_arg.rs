//! A job taking something other than the tick context.
use leader_runtime::leader_role;

#[leader_role("billing", every = "1h")]
async fn job(_pool: sqlx::PgPool) -> Result<(), std::io::Error> {
    Ok(())
}

fn main() {}
