//! [`WebSocketConfig`]: tungstenite's configuration, with public fields.

use crate::config::Config;

/// tungstenite's connection settings, with its public fields and setters.
///
/// lockgate's own [`Config`] holds these and more (deadlines,
/// permessage-deflate, the fragment limit), packed small because every
/// connection keeps one. Wherever lockgate takes a configuration, a
/// `WebSocketConfig` or an `Option<WebSocketConfig>` converts into a
/// [`Config`]: its six settings over [`Config::default`]'s, and `None` for
/// the defaults.
///
/// The defaults are lockgate's, not tungstenite's: reads of 8 KiB (the
/// read buffer grows with what arrives and shrinks back when idle, so a
/// larger first read only costs memory) and a write buffer bounded at
/// 72 MiB (tungstenite's is unbounded), past which `write` hands the
/// message back in [`Error::WriteBufferFull`](crate::Error::WriteBufferFull).
///
/// # Examples
///
/// ```
/// use lockgate::protocol::WebSocketConfig;
///
/// let mut config = WebSocketConfig::default().max_message_size(Some(1 << 20));
/// config.accept_unmasked_frames = true;
/// let config: lockgate::Config = config.into();
/// assert_eq!(config.get_max_message_size(), Some(1 << 20));
/// assert!(config.get_accept_unmasked_frames());
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct WebSocketConfig {
    /// The size of the first and of the smallest socket read. Default
    /// 8 KiB.
    pub read_buffer_size: usize,
    /// Once the out buffer holds this many bytes, `write` writes (without
    /// flushing) to the socket. Default 128 KiB.
    pub write_buffer_size: usize,
    /// The most the out buffer may hold; `write` refuses a message that
    /// would go past it. Default 72 MiB.
    pub max_write_buffer_size: usize,
    /// The largest message accepted; `None` for no limit. Default 64 MiB.
    pub max_message_size: Option<usize>,
    /// The largest frame accepted; `None` for no limit. Default 16 MiB.
    pub max_frame_size: Option<usize>,
    /// Whether a server accepts unmasked frames from clients (RFC 6455
    /// forbids them). Default `false`.
    pub accept_unmasked_frames: bool,
}

impl Default for WebSocketConfig {
    fn default() -> Self {
        WebSocketConfig::from(&Config::default())
    }
}

impl WebSocketConfig {
    /// Sets [`read_buffer_size`](Self::read_buffer_size).
    pub fn read_buffer_size(mut self, read_buffer_size: usize) -> Self {
        self.read_buffer_size = read_buffer_size;
        self
    }

    /// Sets [`write_buffer_size`](Self::write_buffer_size).
    pub fn write_buffer_size(mut self, write_buffer_size: usize) -> Self {
        self.write_buffer_size = write_buffer_size;
        self
    }

    /// Sets [`max_write_buffer_size`](Self::max_write_buffer_size).
    pub fn max_write_buffer_size(mut self, max_write_buffer_size: usize) -> Self {
        self.max_write_buffer_size = max_write_buffer_size;
        self
    }

    /// Sets [`max_message_size`](Self::max_message_size).
    pub fn max_message_size(mut self, max_message_size: Option<usize>) -> Self {
        self.max_message_size = max_message_size;
        self
    }

    /// Sets [`max_frame_size`](Self::max_frame_size).
    pub fn max_frame_size(mut self, max_frame_size: Option<usize>) -> Self {
        self.max_frame_size = max_frame_size;
        self
    }

    /// Sets [`accept_unmasked_frames`](Self::accept_unmasked_frames).
    pub fn accept_unmasked_frames(mut self, accept_unmasked_frames: bool) -> Self {
        self.accept_unmasked_frames = accept_unmasked_frames;
        self
    }

    /// These six settings written over `config`, whose others (deadlines,
    /// compression, the fragment limit) stay as they are.
    pub(crate) fn apply_to(self, config: Config) -> Config {
        config
            .read_buffer_size(self.read_buffer_size)
            .write_buffer_size(self.write_buffer_size)
            .max_write_buffer_size(self.max_write_buffer_size)
            .max_message_size(self.max_message_size)
            .max_frame_size(self.max_frame_size)
            .accept_unmasked_frames(self.accept_unmasked_frames)
    }
}

impl From<&Config> for WebSocketConfig {
    fn from(config: &Config) -> Self {
        WebSocketConfig {
            read_buffer_size: config.get_read_buffer_size(),
            write_buffer_size: config.get_write_buffer_size(),
            max_write_buffer_size: config.get_max_write_buffer_size(),
            max_message_size: config.get_max_message_size(),
            max_frame_size: config.get_max_frame_size(),
            accept_unmasked_frames: config.get_accept_unmasked_frames(),
        }
    }
}

impl From<WebSocketConfig> for Config {
    fn from(config: WebSocketConfig) -> Self {
        config.apply_to(Config::default())
    }
}

/// `None` is [`Config::default`]: what tungstenite's `Option<WebSocketConfig>`
/// parameters mean.
impl From<Option<WebSocketConfig>> for Config {
    fn from(config: Option<WebSocketConfig>) -> Self {
        config.map(Config::from).unwrap_or_default()
    }
}

/// What a driver keeps so that `get_config` can lend a
/// `&WebSocketConfig`, as tungstenite's does (frameworks return that
/// reference from their own APIs).
///
/// The settings live in the connection's packed [`Config`]; this holds
/// tungstenite's layout of them only when they are not the defaults, so a
/// connection that keeps the defaults pays one pointer for it. A driver
/// refreshes it wherever the configuration changes.
///
/// ```
/// use lockgate::Config;
/// use lockgate::protocol::{ConfigView, WebSocketConfig};
///
/// let defaults = ConfigView::of(&Config::default());
/// assert_eq!(*defaults.get(), WebSocketConfig::default());
/// let small = ConfigView::of(&Config::default().max_message_size(Some(1024)));
/// assert_eq!(small.get().max_message_size, Some(1024));
/// ```
#[derive(Debug, Default)]
pub struct ConfigView(Option<Box<WebSocketConfig>>);

/// [`WebSocketConfig::default`], lent by every [`ConfigView`] of a default
/// configuration (a unit test keeps the two equal).
static DEFAULT_VIEW: WebSocketConfig = WebSocketConfig {
    read_buffer_size: 8 * 1024,
    write_buffer_size: 128 * 1024,
    max_write_buffer_size: 72 << 20,
    max_message_size: Some(64 << 20),
    max_frame_size: Some(16 << 20),
    accept_unmasked_frames: false,
};

impl ConfigView {
    /// The view of `config`'s six tungstenite settings.
    pub fn of(config: &Config) -> Self {
        let settings = WebSocketConfig::from(config);
        ConfigView((settings != DEFAULT_VIEW).then(|| Box::new(settings)))
    }

    /// The settings, as tungstenite's `get_config` returns them.
    pub fn get(&self) -> &WebSocketConfig {
        self.0.as_deref().unwrap_or(&DEFAULT_VIEW)
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_default_view_is_the_default_config() {
        assert_eq!(
            super::DEFAULT_VIEW,
            WebSocketConfig::from(&Config::default())
        );
        assert!(super::ConfigView::of(&Config::default()).0.is_none());
    }

    use super::*;

    #[test]
    fn converts_both_ways_without_loss() {
        let config = WebSocketConfig::default()
            .read_buffer_size(4096)
            .write_buffer_size(0)
            .max_write_buffer_size(1 << 20)
            .max_message_size(None)
            .max_frame_size(Some(1000))
            .accept_unmasked_frames(true);
        assert_eq!(WebSocketConfig::from(&Config::from(config)), config);
        assert_eq!(Config::from(None), Config::default());
        assert_eq!(Config::from(WebSocketConfig::default()), Config::default());
    }
}
