//! A JSON object read into a typed struct, and only an object, and a JSON
//! string read in place: the decoders' fast reading of a streamed chunk
//! ([`crate::openai`], [`crate::anthropic`]) must fail, and leave the
//! chunk to their `serde_json::Value` reading, wherever the two could
//! disagree, and should copy nothing it can read where it lies.

use std::borrow::Cow;

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

/// A JSON string, borrowed from the chunk when it holds no escapes and
/// copied when it does. serde borrows a `Cow<str>` field only when `Cow`
/// is the field's own type: inside an `Option` it always copies, which
/// cost an allocation for each optional string of every streamed chunk.
/// Anything but a string fails to read, as a `String` would.
pub(crate) struct Text<'a>(pub(crate) Cow<'a, str>);

impl<'de: 'a, 'a> Deserialize<'de> for Text<'a> {
    fn deserialize<D: de::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct InPlace;
        impl<'de> de::Visitor<'de> for InPlace {
            type Value = Cow<'de, str>;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a string")
            }
            fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Self::Value, E> {
                Ok(Cow::Borrowed(v))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
                Ok(Cow::Owned(v.to_owned()))
            }
            fn visit_string<E: de::Error>(self, v: String) -> Result<Self::Value, E> {
                Ok(Cow::Owned(v))
            }
        }
        d.deserialize_str(InPlace).map(Text)
    }
}

impl std::ops::Deref for Text<'_> {
    type Target = str;
    fn deref(&self) -> &str {
        &self.0
    }
}
