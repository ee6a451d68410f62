//! The severable link: severed, it holds bytes without closing anything; healed, it delivers
//! them; re-pointed, it closes the open connections and sends new ones to the new upstream.

use std::net::SocketAddr;
use std::time::Duration;

use leader_drills::proxy::Link;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// An upstream that answers each byte with `tag`.
async fn upstream(tag: u8) -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((mut socket, _)) = listener.accept().await {
            tokio::spawn(async move {
                let mut byte = [0u8; 1];
                while socket.read_exact(&mut byte).await.is_ok() {
                    if socket.write_all(&[tag]).await.is_err() {
                        return;
                    }
                }
            });
        }
    });
    addr
}

async fn ask(client: &mut TcpStream) -> u8 {
    client.write_all(b"?").await.unwrap();
    let mut answer = [0u8; 1];
    client.read_exact(&mut answer).await.unwrap();
    answer[0]
}

#[tokio::test]
async fn a_severed_link_hangs_without_closing_and_delivers_once_healed() {
    let link = Link::start(upstream(b'a').await).await.unwrap();
    let mut client = TcpStream::connect(("127.0.0.1", link.port()))
        .await
        .unwrap();
    assert_eq!(ask(&mut client).await, b'a');

    link.sever();
    client.write_all(b"?").await.unwrap();
    let mut answer = [0u8; 1];
    let held = tokio::time::timeout(Duration::from_millis(300), client.read(&mut answer)).await;
    assert!(
        held.is_err(),
        "severed: no answer and no close, got {held:?}"
    );

    link.heal();
    client.read_exact(&mut answer).await.unwrap();
    assert_eq!(
        answer[0], b'a',
        "the held request was delivered once healed"
    );
}

#[tokio::test]
async fn re_pointing_closes_open_connections_and_sends_new_ones_to_the_new_upstream() {
    let link = Link::start(upstream(b'a').await).await.unwrap();
    let mut old = TcpStream::connect(("127.0.0.1", link.port()))
        .await
        .unwrap();
    assert_eq!(ask(&mut old).await, b'a');

    link.set_upstream(upstream(b'b').await);
    let mut rest = Vec::new();
    old.read_to_end(&mut rest)
        .await
        .expect("the old connection is closed, not reset");
    let mut new = TcpStream::connect(("127.0.0.1", link.port()))
        .await
        .unwrap();
    assert_eq!(ask(&mut new).await, b'b');
}
