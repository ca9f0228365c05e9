//! Objects (structs, maps and struct variants) walked in place.

use std::collections::{HashMap, HashSet};

use serde::ser::{self, Serialize, SerializeMap as _, Serializer as _};
use serde_json::value::Serializer as ValueSer;
use serde_json::Value;
use tea_agent_schema::redact::{PlanNode, Step};

use super::{
    apply, build, field_step, plan_of, Ctx, Done, Error, ValueMap, ValueStructVariant, Walker,
};
use crate::algo::diff::{diff_into, push_key, PatchOp};
use crate::algo::snapshot::marks::Mark;
use crate::algo::tracked::handshake;
use crate::algo::tree::{Node, NodeMap};

/// The object key serde_json gives `key` (strings as they are, numbers and the like as
/// their text; anything else is serde_json's error).
fn key_string<T: Serialize + ?Sized>(key: &T) -> Result<String, Error> {
    let mut map = ValueSer.serialize_map(Some(1))?;
    map.serialize_key(key)?;
    map.serialize_value(&())?;
    match map.end()? {
        Value::Object(m) => Ok(m.into_iter().next().map(|(k, _)| k).unwrap_or_default()),
        _ => Err(ser::Error::custom("map key did not serialize to a string")),
    }
}

/// The fields not walked in place: the old entries left from the first key that did not
/// match, and the new fields from there on, built.
pub(super) struct Rest<'a> {
    prev: Vec<(&'a String, &'a mut Node)>,
    next: Vec<(String, Value)>,
}

/// An object (a struct or a map) walked in place, or built when the tree holds something
/// else there.
pub(super) enum ObjWalk<'a, 'c, 'p> {
    InPlace {
        ctx: &'c mut Ctx,
        plan: Option<PlanNode<'p>>,
        /// Where the ops of this object start (removes go there).
        ops_start: usize,
        /// Entries walked in place so far.
        kept: usize,
        /// The old entry at the current position.
        ahead: Option<(&'a String, &'a mut Node)>,
        iter: indexmap::map::IterMut<'a, String, Node>,
        rest: Option<Rest<'a>>,
        /// A map key waiting for its value.
        key: Option<String>,
        /// A tracked map sending only its changed entries: its length.
        sparse: Option<usize>,
        /// A tracked map: the mark to record when done.
        mark: Option<Mark>,
    },
    Build {
        inner: ValueMap,
        /// The walker to settle the built value with.
        walker: Walker<'a, 'c, 'p>,
    },
}

impl<'a, 'c, 'p> ObjWalk<'a, 'c, 'p> {
    pub(super) fn in_place(
        map: &'a mut NodeMap,
        plan: Option<PlanNode<'p>>,
        ctx: &'c mut Ctx,
    ) -> Self {
        Self::tracked(map, plan, ctx, None, None)
    }

    /// [`Self::in_place`] for a tracked map: `sparse` is its length when it sends only its
    /// changed entries, `mark` what to record when done.
    pub(super) fn tracked(
        map: &'a mut NodeMap,
        plan: Option<PlanNode<'p>>,
        ctx: &'c mut Ctx,
        sparse: Option<usize>,
        mark: Option<Mark>,
    ) -> Self {
        let mut iter = map.iter_mut();
        ObjWalk::InPlace {
            ops_start: ctx.ops.len(),
            ctx,
            plan,
            kept: 0,
            ahead: iter.next(),
            iter,
            rest: None,
            key: None,
            sparse,
            mark,
        }
    }

    fn field<T: Serialize + ?Sized>(&mut self, key: &str, value: &T) -> Result<(), Error> {
        let ObjWalk::InPlace {
            ctx,
            plan,
            kept,
            ahead,
            iter,
            rest,
            ..
        } = self
        else {
            unreachable!("build mode fields go to serde_json")
        };
        let step = field_step(*plan, key);
        if step == Step::Redact {
            return Ok(());
        }
        let child = plan_of(step);
        if let Some(rest) = rest {
            rest.next.push((key.to_owned(), build(value, child)?));
            return Ok(());
        }
        match ahead.take() {
            Some((k, slot)) if k == key => {
                let base = ctx.path.len();
                push_key(&mut ctx.path, key);
                let done = value.serialize(Walker {
                    target: slot,
                    plan: child,
                    ctx,
                    in_array: false,
                })?;
                apply(slot, done);
                ctx.path.truncate(base);
                *kept += 1;
                *ahead = iter.next();
            }
            other => {
                let mut prev: Vec<(&'a String, &'a mut Node)> = other.into_iter().collect();
                prev.extend(iter);
                *rest = Some(Rest {
                    prev,
                    next: vec![(key.to_owned(), build(value, child)?)],
                });
            }
        }
        Ok(())
    }

    fn finish(mut self) -> Result<Done, Error> {
        if let ObjWalk::InPlace {
            ctx,
            mark: Some(mark),
            ..
        } = &mut self
        {
            ctx.fresh.push((ctx.path.clone(), *mark));
        }
        match self {
            ObjWalk::Build { inner, walker } => walker.rebuilt(ser::SerializeMap::end(inner)),
            ObjWalk::InPlace {
                ctx,
                ops_start,
                mut kept,
                ahead,
                mut iter,
                rest,
                sparse,
                ..
            } => {
                let base = ctx.path.len();
                let rest = match rest {
                    Some(rest) => rest,
                    None => {
                        // Trailing old keys the new value does not have.
                        let mut gone: Vec<(&String, &Node)> = Vec::new();
                        match (sparse, ahead) {
                            (_, None) => return Ok(Done::Same),
                            // A sparse walk: the old entries up to the new length stay as
                            // they are; the trailing ones are taken from the back, so the
                            // entries passed over are never visited.
                            (Some(len), Some(_)) if kept < len => {
                                let held = kept + 1 + iter.len();
                                if held <= len {
                                    return Ok(Done::Same);
                                }
                                gone.extend(
                                    (len..held)
                                        .filter_map(|_| iter.next_back())
                                        .map(|(k, v)| (k, &*v)),
                                );
                                gone.reverse();
                                kept = len;
                            }
                            (_, Some(first)) => {
                                gone.push((first.0, &*first.1));
                                gone.extend(iter.map(|(k, v)| (k, &*v)));
                            }
                        }
                        let gone: Vec<PatchOp> = gone
                            .into_iter()
                            .map(|(k, old)| {
                                push_key(&mut ctx.path, k);
                                ctx.record(|| old.to_value());
                                let path = ctx.path.clone();
                                ctx.path.truncate(base);
                                PatchOp::Remove { path }
                            })
                            .collect();
                        ctx.ops.splice(ops_start..ops_start, gone);
                        return Ok(Done::Splice {
                            keep: kept,
                            rest: Vec::new(),
                        });
                    }
                };
                let next_keys: HashSet<&str> = rest.next.iter().map(|(k, _)| k.as_str()).collect();
                let prev_at: HashMap<&str, usize> = rest
                    .prev
                    .iter()
                    .enumerate()
                    .map(|(i, (k, _))| (k.as_str(), i))
                    .collect();
                // The patch puts added keys last and leaves old ones where they were: it gives
                // the new order unless an old key comes back among the new ones.
                if rest
                    .next
                    .iter()
                    .any(|(k, _)| prev_at.contains_key(k.as_str()))
                {
                    ctx.reordered = true;
                }
                let gone: Vec<PatchOp> = rest
                    .prev
                    .iter()
                    .filter(|(k, _)| !next_keys.contains(k.as_str()))
                    .map(|(k, old)| {
                        push_key(&mut ctx.path, k);
                        ctx.record(|| old.to_value());
                        let path = ctx.path.clone();
                        ctx.path.truncate(base);
                        PatchOp::Remove { path }
                    })
                    .collect();
                for (k, n) in &rest.next {
                    push_key(&mut ctx.path, k);
                    match prev_at.get(k.as_str()) {
                        Some(&i) => {
                            let old = rest.prev[i].1.to_value();
                            diff_into(&old, n, &mut ctx.path, &mut ctx.ops);
                            ctx.record(|| old);
                        }
                        None => ctx.ops.push(PatchOp::Add {
                            path: ctx.path.clone(),
                            value: n.clone(),
                        }),
                    }
                    ctx.path.truncate(base);
                }
                ctx.ops.splice(ops_start..ops_start, gone);
                Ok(Done::Splice {
                    keep: kept,
                    rest: rest.next,
                })
            }
        }
    }
}

impl ser::SerializeMap for ObjWalk<'_, '_, '_> {
    type Ok = Done;
    type Error = Error;
    fn serialize_key<T: Serialize + ?Sized>(&mut self, key: &T) -> Result<(), Error> {
        match self {
            ObjWalk::InPlace {
                key: slot,
                sparse,
                kept,
                ahead,
                iter,
                rest,
                ..
            } => {
                // A sparse walk: the entry's position comes with its key. The old entries
                // before it are the same in the new map (their chunks did not change): they
                // stay as they are.
                let to = match sparse {
                    Some(_) => handshake::take_index(),
                    None => None,
                };
                if let (Some(to), None) = (to, rest) {
                    while *kept < to && ahead.is_some() {
                        *kept += 1;
                        *ahead = iter.next();
                    }
                }
                *slot = Some(key_string(key)?);
                Ok(())
            }
            ObjWalk::Build { inner, .. } => inner.serialize_key(key),
        }
    }
    fn serialize_value<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Error> {
        match self {
            ObjWalk::InPlace { key, .. } => {
                let k = key
                    .take()
                    .ok_or_else(|| ser::Error::custom("map value before its key"))?;
                self.field(&k, value)
            }
            ObjWalk::Build { inner, .. } => inner.serialize_value(value),
        }
    }
    fn end(self) -> Result<Done, Error> {
        self.finish()
    }
}

impl ser::SerializeStruct for ObjWalk<'_, '_, '_> {
    type Ok = Done;
    type Error = Error;
    fn serialize_field<T: Serialize + ?Sized>(
        &mut self,
        key: &'static str,
        value: &T,
    ) -> Result<(), Error> {
        match self {
            ObjWalk::InPlace { .. } => self.field(key, value),
            ObjWalk::Build { inner, .. } => inner.serialize_entry(key, value),
        }
    }
    fn end(self) -> Result<Done, Error> {
        self.finish()
    }
}

/// `{"Variant": {...}}`.
pub(super) enum StructVariantWalk<'a, 'c, 'p> {
    InPlace {
        inner: ObjWalk<'a, 'c, 'p>,
        /// The path length before the variant's key.
        base: usize,
    },
    Build {
        inner: ValueStructVariant,
        /// The walker to settle the built value with.
        walker: Walker<'a, 'c, 'p>,
    },
}

impl ser::SerializeStructVariant for StructVariantWalk<'_, '_, '_> {
    type Ok = Done;
    type Error = Error;
    fn serialize_field<T: Serialize + ?Sized>(
        &mut self,
        key: &'static str,
        value: &T,
    ) -> Result<(), Error> {
        match self {
            StructVariantWalk::InPlace { inner, .. } => inner.field(key, value),
            StructVariantWalk::Build { inner, .. } => {
                ser::SerializeStructVariant::serialize_field(inner, key, value)
            }
        }
    }
    fn end(self) -> Result<Done, Error> {
        match self {
            StructVariantWalk::InPlace { inner, base } => {
                // `finish` consumes the walker holding `ctx`: `finish_at` cuts the path after.
                let done = finish_at(inner, base)?;
                Ok(match done {
                    Done::Same => Done::Same,
                    other => Done::Inner(Box::new(other)),
                })
            }
            StructVariantWalk::Build { inner, walker } => {
                walker.rebuilt(ser::SerializeStructVariant::end(inner))
            }
        }
    }
}

/// Finishes an in-place object walk, then cuts the path back to `base`.
fn finish_at(walk: ObjWalk<'_, '_, '_>, base: usize) -> Result<Done, Error> {
    match walk {
        ObjWalk::InPlace {
            ctx,
            plan,
            ops_start,
            kept,
            ahead,
            iter,
            rest,
            key,
            sparse,
            mark,
        } => {
            let path_ctx: &mut Ctx = ctx;
            let done = ObjWalk::InPlace {
                ctx: &mut *path_ctx,
                plan,
                ops_start,
                kept,
                ahead,
                iter,
                rest,
                key,
                sparse,
                mark,
            }
            .finish()?;
            path_ctx.path.truncate(base);
            Ok(done)
        }
        build => build.finish(),
    }
}
