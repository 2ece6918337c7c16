//! How the dial writes a host and port: one helper that the proxy, the
//! route and the CONNECT request share (a leaf, so none of them imports
//! another for it).

/// `host:port` as an authority, bracketing IPv6 addresses.
pub(crate) fn authority(host: &str, port: u16) -> String {
    if host.contains(':') {
        format!("[{host}]:{port}")
    } else {
        format!("{host}:{port}")
    }
}
