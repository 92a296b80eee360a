//! Loopback ports for peers that must be told theirs before they start (nginx, PostgreSQL,
//! a collector, `openssl s_server`, a gateway whose approval page names its own address).
//! A port picked free is only free until the peer binds it, and another test may take it
//! first: such a start says [`Taken`], and is tried again on another port.

/// How many ports a peer is tried on before the test gives up.
pub const PORT_TRIES: usize = 5;

/// The port picked was taken by someone else before the peer could bind it.
#[derive(Debug)]
pub struct Taken;

/// A loopback port nobody listens on now.
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// Does a peer's output say its port was taken? (The words of the C library's `EADDRINUSE`,
/// which nginx, PostgreSQL, OpenSSL, rotel and Gatehouse all print.)
pub fn says_taken(output: &str) -> bool {
    output.contains("Address already in use") || output.contains("address already in use")
}

/// `start` on a free port, again on another while the one picked was [`Taken`].
pub fn on_a_free_port<T>(what: &str, start: impl FnMut(u16) -> Result<T, Taken>) -> T {
    on_the_first_free(what, &mut free_port, start)
}

/// `start` on each port `ports` gives, until one was not [`Taken`].
pub fn on_the_first_free<T>(
    what: &str,
    ports: &mut dyn FnMut() -> u16,
    mut start: impl FnMut(u16) -> Result<T, Taken>,
) -> T {
    for _ in 0..PORT_TRIES {
        if let Ok(started) = start(ports()) {
            return started;
        }
    }
    panic!("{what} found no free port in {PORT_TRIES} tries");
}

/// A port the test holds, offered to a peer first, then free ones: each offer kept, so the
/// test sees the peer moved on.
pub struct HeldFirst {
    held: std::net::TcpListener,
    /// Every port offered, in order.
    pub offered: Vec<u16>,
}

impl HeldFirst {
    /// Hold a port.
    pub fn new() -> HeldFirst {
        HeldFirst {
            held: std::net::TcpListener::bind("127.0.0.1:0").unwrap(),
            offered: Vec::new(),
        }
    }

    /// The port held.
    pub fn taken(&self) -> u16 {
        self.held.local_addr().unwrap().port()
    }

    /// The next port to offer.
    pub fn next(&mut self) -> u16 {
        let port = if self.offered.is_empty() {
            self.taken()
        } else {
            free_port()
        };
        self.offered.push(port);
        port
    }
}
