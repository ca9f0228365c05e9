//! A [`TrackedVec`] on the wire and in schemas: exactly a `Vec<T>`.

use std::borrow::Cow;

use schemars::{JsonSchema, Schema, SchemaGenerator};
use serde::ser::SerializeSeq as _;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use super::TrackedVec;

/// A JSON array of the elements. To the snapshot walker, only the elements changed since it
/// last saw this vector (see the `handshake` module).
impl<T: Serialize> Serialize for TrackedVec<T> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let len = self.items.len();
        self.changes
            .send(
                len,
                || serializer.serialize_seq(Some(len)),
                |seq, index| seq.serialize_element(&self.items[index]),
            )?
            .end()
    }
}

/// Reads a JSON array; the vector is a new one (its own identity).
impl<'de, T: Deserialize<'de>> Deserialize<'de> for TrackedVec<T> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Vec::<T>::deserialize(deserializer).map(TrackedVec::from)
    }
}

/// The schema of `Vec<T>`, under the same name.
impl<T: JsonSchema> JsonSchema for TrackedVec<T> {
    fn schema_name() -> Cow<'static, str> {
        Vec::<T>::schema_name()
    }
    fn schema_id() -> Cow<'static, str> {
        Vec::<T>::schema_id()
    }
    fn json_schema(generator: &mut SchemaGenerator) -> Schema {
        Vec::<T>::json_schema(generator)
    }
    fn inline_schema() -> bool {
        Vec::<T>::inline_schema()
    }
}
