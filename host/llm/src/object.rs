//! A JSON object read into a typed struct, and only an object: the
//! decoders' fast reading of a streamed chunk ([`crate::openai`],
//! [`crate::anthropic`]) must fail, and leave the chunk to their
//! `serde_json::Value` reading, wherever the two could disagree.

use serde::{Deserialize, de};

/// `T` read from a JSON object only: a derived struct also takes an
/// array, field by field, which a `serde_json::Value` reading would not
/// take as one.
pub(crate) struct Obj<T>(pub(crate) T);

impl<'de, T: Deserialize<'de>> Deserialize<'de> for Obj<T> {
    fn deserialize<D: de::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Fields<T>(std::marker::PhantomData<T>);
        impl<'de, T: Deserialize<'de>> de::Visitor<'de> for Fields<T> {
            type Value = T;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("an object")
            }
            fn visit_map<A: de::MapAccess<'de>>(self, map: A) -> Result<T, A::Error> {
                T::deserialize(de::value::MapAccessDeserializer::new(map))
            }
        }
        d.deserialize_map(Fields(std::marker::PhantomData)).map(Obj)
    }
}
