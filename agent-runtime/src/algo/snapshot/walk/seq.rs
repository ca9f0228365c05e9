//! Arrays (sequences, tuples, tuple structs and tuple variants) walked in place.

use serde::ser::{self, Serialize};
use serde_json::Value;
use tea_agent_schema::redact::PlanNode;

use super::{apply, build, Ctx, Done, Error, ValueSeq, ValueTupleVariant, Walker};
use crate::algo::diff::{diff_into, push_index, PatchOp};
use crate::algo::snapshot::marks::Mark;
use crate::algo::tracked::handshake;
use crate::algo::tree::{unpack, Node};

/// An array walked in place, or built when the tree holds something else there.
pub(super) enum SeqWalk<'a, 'c, 'p> {
    InPlace {
        vec: &'a mut Vec<Node>,
        prev_len: usize,
        index: usize,
        item: Option<PlanNode<'p>>,
        ctx: &'c mut Ctx,
        /// For a tuple variant: the path length to restore at the end.
        base_path: Option<usize>,
        /// A tracked vector sending only its changed elements: its length.
        sparse: Option<usize>,
        /// A tracked vector: the mark to record when done.
        mark: Option<Mark>,
        /// The elements past the old length, built (the ops of `finish` take them).
        added: Vec<Value>,
    },
    Build {
        inner: ValueSeq,
        /// The walker to settle the built value with.
        walker: Walker<'a, 'c, 'p>,
    },
}

impl SeqWalk<'_, '_, '_> {
    pub(super) fn element<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Error> {
        match self {
            SeqWalk::InPlace {
                vec,
                prev_len,
                index,
                item,
                ctx,
                sparse,
                added,
                ..
            } => {
                if sparse.is_some() {
                    if let Some(at) = handshake::take_index() {
                        *index = at;
                    }
                }
                if *index < *prev_len {
                    let base = ctx.path.len();
                    push_index(&mut ctx.path, *index);
                    let slot = &mut vec[*index];
                    if matches!(slot, Node::Packed(_)) {
                        packed(value, slot, *item, ctx)?;
                    } else {
                        let done = value.serialize(Walker {
                            target: slot,
                            plan: *item,
                            ctx,
                            in_array: true,
                        })?;
                        apply(slot, done);
                    }
                    ctx.path.truncate(base);
                } else {
                    added.push(build(value, *item)?);
                }
                *index += 1;
                Ok(())
            }
            SeqWalk::Build { inner, .. } => ser::SerializeSeq::serialize_element(inner, value),
        }
    }

    pub(super) fn finish(self) -> Result<Done, Error> {
        match self {
            SeqWalk::InPlace {
                vec,
                prev_len,
                mut index,
                ctx,
                base_path,
                sparse,
                mark,
                added,
                ..
            } => {
                if let Some(len) = sparse {
                    index = len;
                }
                let base = ctx.path.len();
                for i in (index..prev_len).rev() {
                    push_index(&mut ctx.path, i);
                    ctx.record(|| vec[i].to_value());
                    ctx.ops.push(PatchOp::Remove {
                        path: ctx.path.clone(),
                    });
                    ctx.path.truncate(base);
                }
                vec.truncate(index);
                for value in added {
                    push_index(&mut ctx.path, vec.len());
                    vec.push(ctx.element(&value));
                    ctx.ops.push(PatchOp::Add {
                        path: ctx.path.clone(),
                        value,
                    });
                    ctx.path.truncate(base);
                }
                if let Some(m) = mark {
                    ctx.fresh.push((ctx.path.clone(), m));
                }
                if let Some(b) = base_path {
                    ctx.path.truncate(b);
                }
                Ok(Done::Same)
            }
            SeqWalk::Build { inner, walker } => walker.rebuilt(ser::SerializeSeq::end(inner)),
        }
    }
}

impl ser::SerializeSeq for SeqWalk<'_, '_, '_> {
    type Ok = Done;
    type Error = Error;
    fn serialize_element<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Error> {
        self.element(value)
    }
    fn end(self) -> Result<Done, Error> {
        self.finish()
    }
}

impl ser::SerializeTuple for SeqWalk<'_, '_, '_> {
    type Ok = Done;
    type Error = Error;
    fn serialize_element<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Error> {
        self.element(value)
    }
    fn end(self) -> Result<Done, Error> {
        self.finish()
    }
}

impl ser::SerializeTupleStruct for SeqWalk<'_, '_, '_> {
    type Ok = Done;
    type Error = Error;
    fn serialize_field<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Error> {
        self.element(value)
    }
    fn end(self) -> Result<Done, Error> {
        self.finish()
    }
}

/// `{"Variant": [...]}`.
pub(super) enum TupleVariantWalk<'a, 'c, 'p> {
    InPlace(SeqWalk<'a, 'c, 'p>),
    Build {
        inner: ValueTupleVariant,
        /// The walker to settle the built value with.
        walker: Walker<'a, 'c, 'p>,
    },
}

impl ser::SerializeTupleVariant for TupleVariantWalk<'_, '_, '_> {
    type Ok = Done;
    type Error = Error;
    fn serialize_field<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Error> {
        match self {
            TupleVariantWalk::InPlace(seq) => seq.element(value),
            TupleVariantWalk::Build { inner, .. } => {
                ser::SerializeTupleVariant::serialize_field(inner, value)
            }
        }
    }
    fn end(self) -> Result<Done, Error> {
        match self {
            TupleVariantWalk::InPlace(seq) => seq.finish(),
            TupleVariantWalk::Build { inner, walker } => {
                walker.rebuilt(ser::SerializeTupleVariant::end(inner))
            }
        }
    }
}

/// Walks `value` against a packed element `slot` at the current path: serialized against the
/// old text first, which allocates nothing while they agree; when they differ, the old and
/// new values are diffed (the ops of the element alone) and the new text packed.
///
/// An element holding a tracked collection is unpacked instead and walked in place, so the
/// collection is walked sparsely from then on (its chunks, not the whole element).
fn packed<T: Serialize + ?Sized>(
    value: &T,
    slot: &mut Node,
    plan: Option<PlanNode<'_>>,
    ctx: &mut Ctx,
) -> Result<(), Error> {
    let Node::Packed(raw) = &*slot else {
        unreachable!("called on packed elements only")
    };
    let offers = handshake::offers_made();
    // An element with redacted fields is built (the plan applies to a value); another is
    // serialized against its text first.
    let built = match plan {
        Some(_) => Some(build(value, plan)?),
        None => {
            let same = serializes_to(value, raw.get().as_bytes())?;
            if same && handshake::offers_made() == offers {
                return Ok(());
            }
            None
        }
    };
    if handshake::offers_made() != offers {
        *slot = Node::from_value(unpack(raw));
        let done = value.serialize(Walker {
            target: slot,
            plan,
            ctx,
            in_array: true,
        })?;
        apply(slot, done);
        return Ok(());
    }
    let new = match built {
        Some(new) => new,
        None => build(value, plan)?,
    };
    let old = unpack(raw);
    if old == new {
        // The same value, its keys in another order (a spare brought up to date by a patch
        // puts added keys last): the element takes the serialization's text, no op.
        if !serializes_to(&new, raw.get().as_bytes())? {
            *slot = ctx.element(&new);
        }
        return Ok(());
    }
    diff_into(&old, &new, &mut ctx.path, &mut ctx.ops);
    ctx.record(|| old);
    *slot = ctx.element(&new);
    Ok(())
}

/// Whether `value`'s compact JSON is exactly `text`.
fn serializes_to<T: Serialize + ?Sized>(value: &T, text: &[u8]) -> Result<bool, Error> {
    let mut compare = Compare {
        text,
        at: 0,
        differs: false,
    };
    serde_json::to_writer(&mut compare, value)?;
    Ok(!compare.differs && compare.at == text.len())
}

/// A writer comparing what it is given with a text, byte for byte.
struct Compare<'t> {
    text: &'t [u8],
    at: usize,
    differs: bool,
}

impl std::io::Write for Compare<'_> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        if !self.differs {
            if self.text[self.at..].starts_with(buf) {
                self.at += buf.len();
            } else {
                self.differs = true;
            }
        }
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}
