//! One ingested item as read off the body: its top-level fields, whose strings are borrowed from
//! the body's buffer where they need no unescaping (most do not), and whose other values are
//! JSON. The body's buffer is the parse's arena: an item's texts cost no allocation until the
//! fields an event keeps are copied out of them (`fields.rs`), and nothing is freed per string
//! when the batch is done.
//!
//! Invariants: a batch body is read exactly as a JSON document would be (the same syntax,
//! UTF-8, number-range and recursion checks, every value parsed whatever its field), so a body
//! refused before is refused now and one accepted before is accepted; a field given twice keeps
//! its last value, as a JSON object does.

use std::borrow::Cow;
use std::fmt;

use serde::Deserialize;
use serde::de::value::{MapAccessDeserializer, SeqAccessDeserializer};
use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::{Number, Value};

/// The top-level fields of one item, in the order sent; `None` when the item is not an object.
#[derive(Debug)]
pub struct Item<'a> {
    fields: Option<Vec<(Cow<'a, str>, Slot<'a>)>>,
}

/// The value of one top-level field.
#[derive(Debug, Clone, PartialEq)]
pub enum Slot<'a> {
    /// A string, borrowed from the body unless it held escapes (or was scrubbed).
    Text(Cow<'a, str>),
    /// Any other JSON value, null included.
    Json(Value),
}

impl<'a> Item<'a> {
    /// The fields, or `None` when the item is not a JSON object.
    pub fn fields(&self) -> Option<&[(Cow<'a, str>, Slot<'a>)]> {
        self.fields.as_deref()
    }

    pub(super) fn fields_mut(&mut self) -> Option<&mut Vec<(Cow<'a, str>, Slot<'a>)>> {
        self.fields.as_mut()
    }

    /// The item as the JSON a parse into a `Value` holds, each field as `get` reads it (the last
    /// of a repeated one); null when it is not an object (its value is not kept).
    pub fn to_value(&self) -> Value {
        let Some(fields) = self.fields() else {
            return Value::Null;
        };
        let object = fields
            .iter()
            .filter_map(|(key, _)| Some((key.to_string(), self.get(key)?.to_value())))
            .collect();
        Value::Object(object)
    }

    /// The value of `name` (its last one when it was given twice), null included.
    pub fn get(&self, name: &str) -> Option<&Slot<'a>> {
        lookup(self.fields()?, name)
    }
}

/// The last value of `name` among `fields`.
pub(super) fn lookup<'s, 'a>(
    fields: &'s [(Cow<'a, str>, Slot<'a>)],
    name: &str,
) -> Option<&'s Slot<'a>> {
    fields
        .iter()
        .rev()
        .find(|(key, _)| key == name)
        .map(|(_, slot)| slot)
}

impl Slot<'_> {
    pub fn is_null(&self) -> bool {
        matches!(self, Slot::Json(Value::Null))
    }

    pub fn as_str(&self) -> Option<&str> {
        match self {
            Slot::Text(text) => Some(text),
            Slot::Json(_) => None,
        }
    }

    /// The value as JSON (a text copied).
    pub fn to_value(&self) -> Value {
        match self {
            Slot::Text(text) => Value::String(text.to_string()),
            Slot::Json(value) => value.clone(),
        }
    }
}

/// An item built from JSON that is already parsed (the other wire formats' items, tests).
impl From<Value> for Item<'static> {
    fn from(value: Value) -> Self {
        let fields = match value {
            Value::Object(map) => Some(
                map.into_iter()
                    .map(|(key, value)| {
                        let slot = match value {
                            Value::String(text) => Slot::Text(Cow::Owned(text)),
                            other => Slot::Json(other),
                        };
                        (Cow::Owned(key), slot)
                    })
                    .collect(),
            ),
            _ => None,
        };
        Item { fields }
    }
}

/// What a value is read as, by where it stands.
#[derive(Clone, Copy)]
enum Mode<'f> {
    /// A field's value (or key): a string as text, anything else as JSON.
    Field,
    /// An item: an object as its fields.
    Item,
    /// The batch's array: each element an item.
    Items,
    /// The document: an object whose field of this name holds the items.
    Batch(&'f str),
}

/// A value read in some `Mode`. A value not of the shape its mode reads is parsed as JSON all
/// the same (and dropped by the caller), so the body's validity never depends on its shape.
enum Read<'a> {
    Slot(Slot<'a>),
    Fields(Vec<(Cow<'a, str>, Slot<'a>)>),
    Items(Vec<Item<'a>>),
    Batch(Batch<'a>),
}

impl<'de> DeserializeSeed<'de> for Mode<'_> {
    type Value = Read<'de>;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Mode<'_> {
    type Value = Read<'de>;

    fn expecting(&self, formatter: &mut fmt::Formatter) -> fmt::Result {
        formatter.write_str("any JSON value")
    }

    fn visit_borrowed_str<E: de::Error>(self, text: &'de str) -> Result<Self::Value, E> {
        Ok(Read::Slot(Slot::Text(Cow::Borrowed(text))))
    }

    fn visit_str<E: de::Error>(self, text: &str) -> Result<Self::Value, E> {
        Ok(Read::Slot(Slot::Text(Cow::Owned(text.to_string()))))
    }

    fn visit_string<E: de::Error>(self, text: String) -> Result<Self::Value, E> {
        Ok(Read::Slot(Slot::Text(Cow::Owned(text))))
    }

    fn visit_bool<E: de::Error>(self, value: bool) -> Result<Self::Value, E> {
        Ok(Read::Slot(Slot::Json(Value::Bool(value))))
    }

    fn visit_i64<E: de::Error>(self, value: i64) -> Result<Self::Value, E> {
        Ok(Read::Slot(Slot::Json(Value::Number(value.into()))))
    }

    fn visit_u64<E: de::Error>(self, value: u64) -> Result<Self::Value, E> {
        Ok(Read::Slot(Slot::Json(Value::Number(value.into()))))
    }

    fn visit_f64<E: de::Error>(self, value: f64) -> Result<Self::Value, E> {
        // serde_json hands over finite numbers only, as a parsed `Value` holds them.
        Ok(Read::Slot(Slot::Json(
            Number::from_f64(value).map_or(Value::Null, Value::Number),
        )))
    }

    fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(Read::Slot(Slot::Json(Value::Null)))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        if !matches!(self, Mode::Items) {
            return Value::deserialize(SeqAccessDeserializer::new(seq))
                .map(|value| Read::Slot(Slot::Json(value)));
        }
        let mut items = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(1_024));
        while let Some(read) = seq.next_element_seed(Mode::Item)? {
            items.push(Item::from_read(read));
        }
        Ok(Read::Items(items))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        match self {
            Mode::Item => {
                let mut fields = Vec::with_capacity(map.size_hint().unwrap_or(16));
                while let Some(key) = map.next_key_seed(Mode::Field)? {
                    let value = map.next_value_seed(Mode::Field)?.into_slot()?;
                    fields.push((key.into_text()?, value));
                }
                Ok(Read::Fields(fields))
            }
            Mode::Batch(field) => {
                let mut batch = Batch::Missing;
                while let Some(key) = map.next_key_seed(Mode::Field)? {
                    if key.into_text::<A::Error>()? == field {
                        batch = match map.next_value_seed(Mode::Items)? {
                            Read::Items(items) => Batch::Items(items),
                            _ => Batch::NotAnArray,
                        };
                    } else {
                        map.next_value::<Value>()?;
                    }
                }
                Ok(Read::Batch(batch))
            }
            Mode::Field | Mode::Items => Value::deserialize(MapAccessDeserializer::new(map))
                .map(|value| Read::Slot(Slot::Json(value))),
        }
    }
}

impl<'a> Read<'a> {
    /// A value read in `Mode::Field`, which reads nothing else.
    fn into_slot<E: de::Error>(self) -> Result<Slot<'a>, E> {
        match self {
            Read::Slot(slot) => Ok(slot),
            _ => Err(E::custom("a value read as a field's is a slot")),
        }
    }

    /// An object key (a string in JSON).
    fn into_text<E: de::Error>(self) -> Result<Cow<'a, str>, E> {
        match self.into_slot()? {
            Slot::Text(text) => Ok(text),
            Slot::Json(_) => Err(E::custom("object keys are strings")),
        }
    }
}

impl<'a> Item<'a> {
    fn from_read(read: Read<'a>) -> Self {
        match read {
            Read::Fields(fields) => Item {
                fields: Some(fields),
            },
            _ => Item { fields: None },
        }
    }
}

/// A batch document `{"<field>": [item, …], …}` as read: its items, or what was wrong with
/// its shape (the JSON itself was valid).
pub enum Batch<'a> {
    Items(Vec<Item<'a>>),
    NotAnObject,
    NotAnArray,
    Missing,
}

/// Reads a batch document whose items are under `field`; every other value is parsed as JSON
/// and dropped. The last `field` wins when it is given twice.
pub fn read_batch<'de, D: Deserializer<'de>>(
    deserializer: D,
    field: &str,
) -> Result<Batch<'de>, D::Error> {
    Ok(match Mode::Batch(field).deserialize(deserializer)? {
        Read::Batch(batch) => batch,
        _ => Batch::NotAnObject,
    })
}
