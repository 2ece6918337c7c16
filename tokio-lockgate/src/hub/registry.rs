//! [`Registry`]: which mailboxes are subscribed to which topic.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, RwLock};

use super::mailbox::{Mailbox, lock};

/// Topics and every live mailbox.
///
/// One lock for all topics: a publish holds it for reading while it queues
/// (a short lock and push per subscriber, never a wait), so publishes run
/// side by side and only (un)subscribing takes it for writing.
#[derive(Debug, Default)]
pub(super) struct Registry {
    topics: RwLock<HashMap<Arc<str>, Vec<Arc<Mailbox>>>>,
    /// Every live mailbox, subscribed or not, for closing them all.
    mailboxes: Mutex<HashMap<u64, Arc<Mailbox>>>,
}

impl Registry {
    pub(super) fn register(&self, mailbox: &Arc<Mailbox>) {
        lock(&self.mailboxes).insert(mailbox.id, Arc::clone(mailbox));
    }

    pub(super) fn deregister(&self, id: u64) {
        lock(&self.mailboxes).remove(&id);
    }

    /// Adds `mailbox` to `topic`; the caller knows it is not there yet.
    pub(super) fn subscribe(&self, topic: &Arc<str>, mailbox: &Arc<Mailbox>) {
        let mut topics = self.topics.write().unwrap_or_else(|p| p.into_inner());
        topics
            .entry(Arc::clone(topic))
            .or_default()
            .push(Arc::clone(mailbox));
    }

    /// Removes the mailbox `id` from `topic`, and the topic once empty.
    pub(super) fn unsubscribe(&self, topic: &str, id: u64) {
        let mut topics = self.topics.write().unwrap_or_else(|p| p.into_inner());
        if let Some(subscribers) = topics.get_mut(topic) {
            if let Some(at) = subscribers.iter().position(|m| m.id == id) {
                subscribers.swap_remove(at);
            }
            if subscribers.is_empty() {
                topics.remove(topic);
            }
        }
    }

    pub(super) fn for_each_subscriber(&self, topic: &str, f: impl FnMut(&Arc<Mailbox>)) {
        let topics = self.topics.read().unwrap_or_else(|p| p.into_inner());
        if let Some(subscribers) = topics.get(topic) {
            subscribers.iter().for_each(f);
        }
    }

    pub(super) fn for_each_mailbox(&self, f: impl FnMut(&Arc<Mailbox>)) {
        lock(&self.mailboxes).values().for_each(f);
    }

    pub(super) fn subscribers(&self, topic: &str) -> usize {
        let topics = self.topics.read().unwrap_or_else(|p| p.into_inner());
        topics.get(topic).map_or(0, Vec::len)
    }

    pub(super) fn topics(&self) -> usize {
        self.topics.read().unwrap_or_else(|p| p.into_inner()).len()
    }
}
