//! A shut-down cluster runs statements in single-user mode, and `restart` brings its server back.

use std::io::Write as _;
use std::net::TcpStream;
use std::process::Stdio;

use leader_testkit::Cluster;

#[test]
fn a_shut_down_cluster_answers_in_single_user_mode_and_restarts() {
    let cluster = Cluster::start().expect("a cluster starts");
    cluster.shut_down().expect("the server shuts down");
    assert!(
        TcpStream::connect(("127.0.0.1", cluster.port())).is_err(),
        "the server still listens after shut_down"
    );

    let mut child = cluster
        .single_user("postgres", &[])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("postgres --single starts");
    child
        .stdin
        .take()
        .expect("stdin is piped")
        .write_all(b"SELECT 41 + 1 AS answer;\n")
        .expect("the statement is written");
    let out = child.wait_with_output().expect("postgres --single ends");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{out:?}");
    assert!(stdout.contains("1: answer = \"42\""), "{stdout}");

    cluster.restart("fast").expect("the server comes back");
    TcpStream::connect(("127.0.0.1", cluster.port())).expect("the server listens again");
}
