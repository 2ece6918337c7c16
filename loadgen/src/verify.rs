//! What one broadcast subscriber has received of each publisher, checked
//! as it arrives: exactly once, in order.

/// The next sequence number expected from each publisher.
#[derive(Debug, Clone)]
pub(crate) struct Expected {
    next: Vec<u64>,
}

impl Expected {
    pub(crate) fn new(publishers: usize) -> Self {
        Self {
            next: vec![0; publishers],
        }
    }

    /// Accepts message `seq` of `publisher`, or says what is wrong with it.
    pub(crate) fn accept(&mut self, publisher: u32, seq: u64) -> Result<(), String> {
        let Some(next) = self.next.get_mut(publisher as usize) else {
            return Err(format!(
                "a message from publisher {publisher}, which does not exist"
            ));
        };
        match seq.cmp(next) {
            std::cmp::Ordering::Equal => {
                *next += 1;
                Ok(())
            }
            std::cmp::Ordering::Less => Err(format!(
                "message {seq} of publisher {publisher} again, after message {} \
                 (duplicated or reordered)",
                *next - 1
            )),
            std::cmp::Ordering::Greater => Err(format!(
                "message {seq} of publisher {publisher} where {} was due \
                 ({} lost or reordered)",
                *next,
                seq - *next
            )),
        }
    }

    /// Messages received in all.
    pub(crate) fn total(&self) -> u64 {
        self.next.iter().sum()
    }

    /// Messages of `sent` (each publisher's confirmed count) not received.
    pub(crate) fn missing(&self, sent: &[u64]) -> u64 {
        sent.iter()
            .zip(&self.next)
            .map(|(&sent, &got)| sent.saturating_sub(got))
            .sum()
    }

    /// Which publishers it still misses messages of, and how many, for the
    /// error message.
    pub(crate) fn describe_missing(&self, sent: &[u64]) -> String {
        sent.iter()
            .zip(&self.next)
            .enumerate()
            .filter(|(_, (sent, got))| got < sent)
            .map(|(p, (sent, got))| format!("publisher {p}: {got} of {sent}"))
            .collect::<Vec<_>>()
            .join(", ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn in_order_messages_are_accepted_per_publisher() {
        let mut expected = Expected::new(2);
        for (p, seq) in [(0, 0), (1, 0), (0, 1), (0, 2), (1, 1)] {
            expected.accept(p, seq).unwrap();
        }
        assert_eq!(expected.total(), 5);
        assert_eq!(expected.missing(&[3, 2]), 0);
        assert_eq!(expected.missing(&[5, 2]), 2);
        assert_eq!(expected.describe_missing(&[5, 2]), "publisher 0: 3 of 5");
    }

    #[test]
    fn gaps_duplicates_reordering_and_strangers_are_caught() {
        for (script, wrong) in [
            (vec![(0, 0), (0, 2)], "lost or reordered"),
            (vec![(0, 0), (0, 0)], "duplicated or reordered"),
            (vec![(0, 0), (0, 1), (0, 3), (0, 2)], "lost or reordered"),
            (vec![(0, 1)], "lost or reordered"),
            (vec![(2, 0)], "does not exist"),
        ] {
            let mut expected = Expected::new(2);
            let error = script
                .iter()
                .map(|&(p, seq)| expected.accept(p, seq))
                .find_map(Result::err)
                .unwrap_or_else(|| panic!("{script:?} accepted"));
            assert!(error.contains(wrong), "{script:?}: {error}");
        }
    }
}
