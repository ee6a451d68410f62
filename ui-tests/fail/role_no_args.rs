//! A job without a tick context parameter.
use leader_runtime::leader_role;

#[leader_role("billing", every = "1h")]
async fn job() -> Result<(), std::io::Error> {
    Ok(())
}

fn main() {}
