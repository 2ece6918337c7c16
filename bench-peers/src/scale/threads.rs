//! Echo servers that run one event loop per thread ([`WORKERS`] of them,
//! as the tokio servers' worker threads) instead of a tokio runtime:
//! uring-lockgate's rings and the floors. An accept thread hands each
//! accepted socket to a loop chosen by a hash of its peer's address.

use std::net::{TcpListener, TcpStream};
use std::sync::Arc;
use std::sync::atomic::AtomicUsize;

use super::control;
use super::servers::WORKERS;

/// Hands a socket to one loop.
pub(super) type Hand = Box<dyn Fn(TcpStream)>;

/// Serves until stdin closes (the control thread ends the process):
/// prints the port, starts [`WORKERS`] loops with `start` (each given the
/// count of live connections it must keep), and feeds them. `name` is
/// what a failure is reported as.
pub(super) fn serve(name: &str, start: impl Fn(Arc<AtomicUsize>) -> Hand) -> ! {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1");
    let port = listener.local_addr().expect("listener address").port();
    println!("PORT {port}");
    let live = Arc::new(AtomicUsize::new(0));
    let count = Arc::clone(&live);
    std::thread::spawn(move || control::answer(count, None));
    let loops: Vec<Hand> = (0..WORKERS).map(|_| start(Arc::clone(&live))).collect();
    for accepted in listener.incoming() {
        let s = accepted.unwrap_or_else(|e| crate::fail(name, &format!("accept: {e}")));
        loops[loop_of(&s)](s);
    }
    unreachable!("incoming() never ends")
}

/// The loop a connection goes to: a hash of its peer's address, as
/// `SO_REUSEPORT` spreads connections over listeners. Taking turns would
/// put every busy connection of the load (every 20th, evenly spread) on
/// one loop.
fn loop_of(s: &TcpStream) -> usize {
    use std::hash::{BuildHasher, BuildHasherDefault, DefaultHasher};
    let peer = s.peer_addr().map(|a| a.port()).unwrap_or_default();
    let hash = BuildHasherDefault::<DefaultHasher>::default().hash_one(peer);
    (hash % WORKERS as u64) as usize
}
