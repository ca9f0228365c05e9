//! [`Bindings`]: the variants an app's UI offers now, pass 1 of `list_actions`
//! (`docs/semantics.md` §4).

/// Which variants the app's UI lets the user trigger now: what `App::bindings` (in
/// `tea-agent-runtime`) returns, as variant kinds (`K` is the `MsgKind` enum `#[derive(AgentMsg)]`
/// generates, so a misspelt variant does not compile).
///
/// - [`Bindings::all`] (the default): every variant an agent may send, in declaration order,
///   each with its synthesized `payloadHint`;
/// - [`Bindings::only`] (or `From` a `Vec` or an array): these variants, in this order,
///   `source: "binding"`, `payloadHint: null`. Binding a `@humanOnly` variant (or a
///   `#[serde(skip)]` one) is allowed: it stays hidden from agents.
///
/// ```
/// # use tea_agent_schema::Bindings;
/// # #[derive(Debug, Clone, Copy, PartialEq)]
/// # enum MsgKind { Add, Clear }
/// let narrowed = Bindings::only([MsgKind::Add, MsgKind::Clear]);
/// assert_eq!(narrowed.kinds(), Some(&[MsgKind::Add, MsgKind::Clear][..]));
/// assert!(Bindings::<MsgKind>::all().is_all());
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Bindings<K> {
    /// `None`: every variant an agent may send.
    only: Option<Vec<K>>,
}

impl<K> Bindings<K> {
    /// Every variant an agent may send (every variant not `@humanOnly`), in declaration order:
    /// an app that does not narrow its bindings offers its whole agent surface.
    pub const fn all() -> Self {
        Bindings { only: None }
    }

    /// Exactly these variants, in this order (first occurrence of each).
    pub fn only(kinds: impl IntoIterator<Item = K>) -> Self {
        Bindings {
            only: Some(kinds.into_iter().collect()),
        }
    }

    /// No variant: only the affordances hook, `@alwaysAffordable` and `@agentOnly` variants
    /// are listed (`docs/semantics.md` §4).
    pub const fn none() -> Self {
        Bindings {
            only: Some(Vec::new()),
        }
    }

    /// Whether these are [`Bindings::all`].
    pub fn is_all(&self) -> bool {
        self.only.is_none()
    }

    /// The variants of [`Bindings::only`], `None` for [`Bindings::all`].
    pub fn kinds(&self) -> Option<&[K]> {
        self.only.as_deref()
    }

    /// The same bindings with every kind mapped by `f` (the runtime maps kinds to wire names).
    pub fn map<T>(&self, f: impl FnMut(&K) -> T) -> Bindings<T> {
        Bindings {
            only: self
                .only
                .as_ref()
                .map(|kinds| kinds.iter().map(f).collect()),
        }
    }
}

impl<K> Default for Bindings<K> {
    /// [`Bindings::all`].
    fn default() -> Self {
        Bindings::all()
    }
}

impl<K> From<Vec<K>> for Bindings<K> {
    /// [`Bindings::only`] these.
    fn from(kinds: Vec<K>) -> Self {
        Bindings { only: Some(kinds) }
    }
}

impl<K, const N: usize> From<[K; N]> for Bindings<K> {
    /// [`Bindings::only`] these.
    fn from(kinds: [K; N]) -> Self {
        Bindings::only(kinds)
    }
}

impl<K> FromIterator<K> for Bindings<K> {
    /// [`Bindings::only`] these.
    fn from_iter<I: IntoIterator<Item = K>>(kinds: I) -> Self {
        Bindings::only(kinds)
    }
}
