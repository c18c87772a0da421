//! Stage "observe", TensorBoard: one event file's scalars as TensorBoard's `EventAccumulator`
//! (with `size_guidance` 0: every value kept) lists them — what Megatron's golden script
//! reads. Tags in the order they first appear; every value in file order (a step written
//! twice appears twice). Orphaned data is purged as TensorBoard does: in a file whose
//! `file_version` is `brain.Event:2` or later, a `SessionLog.START` event drops every scalar
//! at its step or later; in an older file, an event at a step below the latest seen drops its
//! own tags' scalars at that step or later. `simple_value`s are the scalars; one-element
//! tensors are kept apart (`tensors`), as TensorBoard keeps them apart.

use super::event::{Event, Scalar};

/// One tag's values in file order.
#[derive(Clone, Debug, PartialEq)]
pub struct TagSeries {
    pub tag: String,
    /// (step, value) in the order written.
    pub points: Vec<(i64, f64)>,
}

/// What an accumulator keeps of one file.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Accumulated {
    /// `simple_value` scalars, tags in first-seen order (a tag purged to no value stays).
    pub scalars: Vec<TagSeries>,
    /// One-element tensors, tags in first-seen order.
    pub tensors: Vec<TagSeries>,
}

impl Accumulated {
    /// The scalars of `tag`.
    pub fn scalar(&self, tag: &str) -> Option<&TagSeries> {
        self.scalars.iter().find(|s| s.tag == tag)
    }
}

/// `event_util.ParseFileVersion`: the number after `brain.Event:`, -1 when it is none.
fn parse_file_version(text: &str) -> f64 {
    let last = text.rsplit("brain.Event:").next().unwrap_or(text);
    last.trim().parse().unwrap_or(-1.0)
}

fn push(series: &mut Vec<TagSeries>, tag: &str, point: (i64, f64)) {
    match series.iter_mut().find(|s| s.tag == tag) {
        Some(s) => s.points.push(point),
        None => series.push(TagSeries {
            tag: tag.to_owned(),
            points: vec![point],
        }),
    }
}

/// Folds one file's events, in order, into its [`Accumulated`] scalars: events are handed
/// over one at a time as they are read, and only the scalars stay.
#[derive(Debug, Default)]
pub struct Accumulator {
    out: Accumulated,
    file_version: Option<f64>,
    most_recent_step: Option<i64>,
}

impl Accumulator {
    /// The next event of the file.
    pub fn add(&mut self, event: &Event) {
        let out = &mut self.out;
        if let Some(v) = &event.file_version {
            self.file_version = Some(parse_file_version(v));
        }
        // Python's `self.file_version and self.file_version >= 2` (0.0 is false).
        let versioned = self.file_version.is_some_and(|v| v != 0.0 && v >= 2.0);
        let most_recent_step = self.most_recent_step.unwrap_or(-1);
        if versioned {
            if event.session_start {
                for s in &mut out.scalars {
                    s.points.retain(|(step, _)| *step < event.step);
                }
            }
        } else if event.step < most_recent_step && event.has_summary {
            for value in &event.values {
                if let Some(s) = out.scalars.iter_mut().find(|s| s.tag == value.tag) {
                    s.points.retain(|(step, _)| *step < event.step);
                }
            }
        } else {
            self.most_recent_step = Some(event.step);
        }
        for value in &event.values {
            match value.scalar {
                Some(Scalar::Simple(v)) => {
                    push(&mut out.scalars, &value.tag, (event.step, f64::from(v)))
                }
                Some(Scalar::Tensor(v)) => push(&mut out.tensors, &value.tag, (event.step, v)),
                None => {}
            }
        }
    }

    /// The file's scalars.
    pub fn finish(self) -> Accumulated {
        self.out
    }
}

/// The scalars of one file's events.
pub fn accumulate(events: &[Event]) -> Accumulated {
    let mut acc = Accumulator::default();
    for event in events {
        acc.add(event);
    }
    acc.finish()
}

#[cfg(test)]
mod tests {
    use super::super::event::SummaryValue;
    use super::*;

    fn scalar_event(step: i64, tag: &str, v: f32) -> Event {
        Event {
            step,
            has_summary: true,
            values: vec![SummaryValue {
                tag: tag.into(),
                scalar: Some(Scalar::Simple(v)),
            }],
            ..Event::default()
        }
    }

    fn versioned() -> Event {
        Event {
            file_version: Some("brain.Event:2".into()),
            ..Event::default()
        }
    }

    #[test]
    fn tags_in_first_seen_order_and_duplicates_kept() {
        let events = [
            versioned(),
            scalar_event(1, "b", 1.0),
            scalar_event(1, "a", 2.0),
            scalar_event(2, "b", 3.0),
            scalar_event(2, "b", 4.0),
        ];
        let acc = accumulate(&events);
        let tags: Vec<&str> = acc.scalars.iter().map(|s| s.tag.as_str()).collect();
        assert_eq!(tags, ["b", "a"]);
        assert_eq!(
            acc.scalar("b").unwrap().points,
            [(1, 1.0), (2, 3.0), (2, 4.0)]
        );
    }

    #[test]
    fn session_start_purges_later_steps_in_versioned_files() {
        let start = Event {
            step: 2,
            session_start: true,
            ..Event::default()
        };
        let events = [
            versioned(),
            scalar_event(1, "a", 1.0),
            scalar_event(3, "a", 3.0),
            start.clone(),
            scalar_event(2, "a", 2.0),
        ];
        assert_eq!(
            accumulate(&events).scalar("a").unwrap().points,
            [(1, 1.0), (2, 2.0)]
        );
        // Without a file version a START means nothing, but an out-of-order step purges its tag.
        let events = [
            scalar_event(1, "a", 1.0),
            scalar_event(3, "a", 3.0),
            scalar_event(3, "b", 3.0),
            scalar_event(2, "a", 2.0),
        ];
        let acc = accumulate(&events);
        assert_eq!(acc.scalar("a").unwrap().points, [(1, 1.0), (2, 2.0)]);
        assert_eq!(acc.scalar("b").unwrap().points, [(3, 3.0)]);
    }

    #[test]
    fn file_versions_parse_as_tensorboard_does() {
        assert_eq!(parse_file_version("brain.Event:2"), 2.0);
        assert_eq!(parse_file_version("brain.Event:1"), 1.0);
        assert_eq!(parse_file_version("garbage"), -1.0);
    }
}
