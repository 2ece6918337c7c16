//! Topic names: what a client may ask for in `/topics/NAME`, and how a
//! topic maps to a NATS subject.

/// The longest topic name accepted.
pub const MAX_TOPIC_LEN: usize = 128;

/// The topic named by a request path `/topics/NAME`, if NAME is a valid
/// topic: 1 to [`MAX_TOPIC_LEN`] ASCII letters, digits, `-` and `_`.
///
/// Anything else is refused, so a client can never name a NATS wildcard
/// (`*`, `>`) or another subject hierarchy (`.`).
pub fn from_path(path: &str) -> Option<&str> {
    let name = path.strip_prefix("/topics/")?;
    // A query string is not part of the name.
    let name = name.split_once('?').map_or(name, |(name, _)| name);
    is_valid(name).then_some(name)
}

/// Whether `name` is a valid topic name.
pub fn is_valid(name: &str) -> bool {
    (1..=MAX_TOPIC_LEN).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

#[cfg(feature = "nats")]
/// Whether a relayed message is text or binary: part of the subject, so
/// the payload crosses the broker untouched.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    Text,
    Binary,
}

#[cfg(feature = "nats")]
/// The prefix of every subject the nodes use.
pub(crate) const SUBJECT_PREFIX: &str = "lockgate.topics";

#[cfg(feature = "nats")]
/// The subject a message of `kind` on `topic` is relayed under.
pub(crate) fn subject(kind: Kind, topic: &str) -> String {
    let kind = match kind {
        Kind::Text => 't',
        Kind::Binary => 'b',
    };
    format!("{SUBJECT_PREFIX}.{kind}.{topic}")
}

#[cfg(feature = "nats")]
/// A subject no node subscribes to, for round trips to the server.
pub(crate) const SYNC_SUBJECT: &str = "lockgate.sync";

#[cfg(feature = "nats")]
/// The subscription that receives every relayed message.
pub(crate) fn all_subjects() -> String {
    format!("{SUBJECT_PREFIX}.*.*")
}

#[cfg(feature = "nats")]
/// The kind and topic of a relayed subject; `None` for a subject no node
/// publishes (it is ignored).
pub(crate) fn parse_subject(subject: &str) -> Option<(Kind, &str)> {
    let rest = subject.strip_prefix(SUBJECT_PREFIX)?.strip_prefix('.')?;
    let (kind, topic) = rest.split_once('.')?;
    let kind = match kind {
        "t" => Kind::Text,
        "b" => Kind::Binary,
        _ => return None,
    };
    is_valid(topic).then_some((kind, topic))
}

// The subject mapping is tested with the relay that uses it.
#[cfg(all(test, feature = "nats"))]
mod tests {
    use super::*;

    #[test]
    fn paths_name_valid_topics_only() {
        for (path, topic) in [
            ("/topics/chat", Some("chat")),
            ("/topics/room-1_a", Some("room-1_a")),
            ("/topics/chat?token=x", Some("chat")),
            ("/topics/", None),
            ("/topics", None),
            ("/other/chat", None),
            ("/topics/a.b", None),
            ("/topics/*", None),
            ("/topics/>", None),
            ("/topics/a b", None),
            ("/topics/a/b", None),
            ("/topics/%2A", None),
            ("/topics/é", None),
        ] {
            assert_eq!(from_path(path), topic, "{path}");
        }
        let long = format!("/topics/{}", "a".repeat(MAX_TOPIC_LEN + 1));
        assert_eq!(from_path(&long), None);
    }

    proptest::proptest! {
        /// Whatever a client puts in its path, a topic is either refused or
        /// a valid name, which is one NATS subject token that round-trips.
        #[test]
        fn any_path_yields_a_valid_topic_or_none(path in "\\PC*", name in "[A-Za-z0-9_.*> -]{0,140}") {
            for path in [path, format!("/topics/{name}")] {
                if let Some(topic) = from_path(&path) {
                    proptest::prop_assert!(is_valid(topic));
                    for kind in [Kind::Text, Kind::Binary] {
                        let relayed = subject(kind, topic);
                        proptest::prop_assert_eq!(parse_subject(&relayed), Some((kind, topic)));
                    }
                }
            }
        }

        #[test]
        fn any_subject_parses_without_panicking(subject in "\\PC{0,80}") {
            let _ = parse_subject(&subject);
        }
    }

    #[test]
    fn subjects_round_trip() {
        for kind in [Kind::Text, Kind::Binary] {
            let subject = subject(kind, "prices");
            assert_eq!(parse_subject(&subject), Some((kind, "prices")));
        }
        for foreign in [
            "other.t.x",
            "lockgate.topics.x.y",
            "lockgate.topics.t.a.b",
            "lockgate.topics.t.*",
        ] {
            assert_eq!(parse_subject(foreign), None, "{foreign}");
        }
    }
}
