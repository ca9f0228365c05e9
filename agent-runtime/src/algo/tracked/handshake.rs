//! The handshake between a [`TrackedVec`](super::TrackedVec) being serialized and the
//! snapshot walker serializing it.
//!
//! serde gives a type no way to ask which serializer it is talking to, and a serializer no
//! way to ask a type what changed. So the two meet in three per-thread slots, each filled by
//! one side right before a call into the other and emptied by the other side on entry:
//!
//! 1. the vector puts an [`Offer`] (its identity, version and length) in the offer slot, calls
//!    `serialize_seq`, and empties the slot when that call returns;
//! 2. the walker's `serialize_seq` takes the offer and, when it holds the vector's previous
//!    serialization, answers with a [`Held`] (the version it saw and the length it holds);
//! 3. given a reply, the vector sends only the elements of the chunks changed since that
//!    version and those past the held length, each preceded by its index in the index slot.
//!
//! Any other serializer never looks at the slots: it gets no offer taken, so no reply comes
//! back and the vector sends every element, in order, as a plain `Vec` would. Serialization
//! is synchronous and each slot is read right after it is filled, on the same thread, so a
//! value never outlives the call it belongs to.

use std::cell::Cell;

/// What a vector tells the walker about itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Offer {
    /// Unique to one vector value (a clone or a deserialized copy gets a new one).
    pub id: u64,
    /// Its version: every change gives the chunks it touches a higher one.
    pub version: u64,
    /// Its length.
    pub len: usize,
}

/// What the walker answers: it holds the vector's serialization at `version` (elements in
/// chunks not changed since are the same), `held` elements long.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Held {
    pub version: u64,
    pub held: usize,
}

thread_local! {
    static OFFER: Cell<Option<Offer>> = const { Cell::new(None) };
    static REPLY: Cell<Option<Held>> = const { Cell::new(None) };
    static INDEX: Cell<Option<usize>> = const { Cell::new(None) };
    static OFFERS: Cell<u64> = const { Cell::new(0) };
}

/// How many offers vectors made on this thread so far: a serialization during which this
/// grows went through a tracked collection.
pub(crate) fn offers_made() -> u64 {
    OFFERS.with(Cell::get)
}

/// The vector's side of steps 1 and 2: runs `start` (its `serialize_seq` call) with `offer`
/// in the slot, and returns its result with the walker's reply, if any.
pub(crate) fn offer<R>(offer: Offer, start: impl FnOnce() -> R) -> (R, Option<Held>) {
    OFFER.with(|slot| slot.set(Some(offer)));
    REPLY.with(|slot| slot.set(None));
    OFFERS.with(|n| n.set(n.get().wrapping_add(1)));
    let started = start();
    OFFER.with(|slot| slot.set(None));
    (started, REPLY.with(Cell::take))
}

/// The walker's side of step 2: the pending offer, if a vector made one.
pub(crate) fn take_offer() -> Option<Offer> {
    OFFER.with(Cell::take)
}

/// The walker's answer to the offer it took.
pub(crate) fn reply(reply: Held) {
    REPLY.with(|slot| slot.set(Some(reply)));
}

/// The vector's side of step 3: the index of the element it sends next.
pub(crate) fn announce_index(index: usize) {
    INDEX.with(|slot| slot.set(Some(index)));
}

/// The walker's side of step 3.
pub(crate) fn take_index() -> Option<usize> {
    INDEX.with(Cell::take)
}
