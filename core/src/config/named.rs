//! Stage "plan": a YAML mapping read in file order, each key with its line and column.
//!
//! `goldgate.yaml` lists platforms, axes and axis values as mappings whose order matters (the
//! first platform and the first value of an axis are the defaults), so they are read into a
//! vector instead of a hash map.

use std::fmt;
use std::marker::PhantomData;

use serde::Deserialize;
use serde::de::{Deserializer, MapAccess, Visitor};
use serde_saphyr::Spanned;

/// A mapping kept in file order: `(key, value)` pairs, keys with their location.
#[derive(Debug, Clone)]
pub(crate) struct Named<T>(pub(crate) Vec<(Spanned<String>, T)>);

impl<T> Default for Named<T> {
    fn default() -> Self {
        Named(Vec::new())
    }
}

impl<'de, T: Deserialize<'de>> Deserialize<'de> for Named<T> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_map(NamedVisitor(PhantomData))
    }
}

struct NamedVisitor<T>(PhantomData<T>);

impl<'de, T: Deserialize<'de>> Visitor<'de> for NamedVisitor<T> {
    type Value = Named<T>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a mapping of names")
    }

    fn visit_unit<E: serde::de::Error>(self) -> Result<Self::Value, E> {
        Ok(Named(Vec::new()))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut entries = Vec::new();
        while let Some((key, value)) = map.next_entry::<Spanned<String>, T>()? {
            entries.push((key, value));
        }
        Ok(Named(entries))
    }
}

/// A mapping of plain strings in file order (`env:` and `args:` blocks), values as written.
pub(crate) type StringMap = Named<Option<String>>;

/// Flattens a [`StringMap`] into `(key, value)` pairs; a null value becomes the empty string.
pub(crate) fn string_pairs(map: Named<Option<String>>) -> Vec<(String, String)> {
    map.0
        .into_iter()
        .map(|(k, v)| (k.value, v.unwrap_or_default()))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_file_order_and_locations() {
        let named: Named<u32> = serde_saphyr::from_str("zeta: 1\nalpha: 2\n").unwrap();
        let keys: Vec<_> = named
            .0
            .iter()
            .map(|(k, v)| (k.value.as_str(), *v))
            .collect();
        assert_eq!(keys, [("zeta", 1), ("alpha", 2)]);
        assert_eq!(named.0[1].0.referenced.line(), 2);
    }

    #[test]
    fn null_values_become_empty_strings() {
        let map: StringMap = serde_saphyr::from_str("A:\nB: 0.8\n").unwrap();
        assert_eq!(
            string_pairs(map),
            [("A".into(), "".into()), ("B".into(), "0.8".into())]
        );
    }
}
