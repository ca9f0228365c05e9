//! What a credential may do (`docs/authorization.md` §Scopes): reading the app, or reading and
//! acting in it. Every operation declares the one it needs in the operation table; a token
//! record carries what it was granted ([`TokenRecord::scope`](super::TokenRecord::scope):
//! `None`, every scope, for a minted `agt_` token as before scopes existed).

/// One scope an operation needs or a credential holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Scope {
    /// Reads: observe, state, describe, actions, wait, the caller's own pending proposals.
    Read,
    /// Acts: dispatch, proposals, withdraw, cancel, narrate. Implies [`Scope::Read`].
    Act,
}

impl Scope {
    /// Every scope, the weakest first.
    pub(crate) const ALL: [Scope; 2] = [Scope::Read, Scope::Act];

    /// The wire spelling (`app:read`, `app:act`), as OAuth's `scope` parameter lists it.
    pub(crate) const fn as_str(self) -> &'static str {
        match self {
            Scope::Read => "app:read",
            Scope::Act => "app:act",
        }
    }

    /// What a person is told the scope lets an agent do (the consent page).
    #[cfg_attr(not(feature = "oauth"), allow(dead_code))]
    pub(crate) const fn meaning(self) -> &'static str {
        match self {
            Scope::Read => "read the app: its state, the actions available, its description",
            Scope::Act => "act in the app: send messages, propose confirmations, cancel its work",
        }
    }

    /// The scope spelled `s`.
    pub(crate) fn parse(s: &str) -> Option<Scope> {
        Scope::ALL.into_iter().find(|scope| scope.as_str() == s)
    }
}

/// Whether a credential granted `granted` (a space-separated scope list, `None` for every
/// scope) may run an operation that needs `needed`. `app:act` implies `app:read`; unknown
/// words grant nothing.
pub(crate) fn allows(granted: Option<&str>, needed: Scope) -> bool {
    let Some(granted) = granted else {
        return true;
    };
    granted
        .split(' ')
        .filter_map(Scope::parse)
        .any(|held| held == needed || (held == Scope::Act && needed == Scope::Read))
}

/// A requested scope list read strictly: space-separated known scopes, normalized (sorted,
/// deduplicated, `app:read` added to `app:act`). `Err` names the first unknown word; an empty
/// list is `Ok(None)` (the caller picks its default).
pub(crate) fn parse_list(text: &str) -> Result<Option<Vec<Scope>>, String> {
    let mut scopes = Vec::new();
    for word in text.split(' ').filter(|w| !w.is_empty()) {
        let scope = Scope::parse(word).ok_or_else(|| word.chars().take(64).collect::<String>())?;
        if scope == Scope::Act && !scopes.contains(&Scope::Read) {
            scopes.push(Scope::Read);
        }
        if !scopes.contains(&scope) {
            scopes.push(scope);
        }
    }
    scopes.sort_by_key(|s| Scope::ALL.iter().position(|a| a == s));
    Ok((!scopes.is_empty()).then_some(scopes))
}

/// `scopes` as OAuth's space-separated `scope` text.
pub(crate) fn to_text(scopes: &[Scope]) -> String {
    scopes
        .iter()
        .map(|s| s.as_str())
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_scope_allows_what_it_implies() {
        assert!(allows(None, Scope::Act));
        assert!(allows(Some("app:read"), Scope::Read));
        assert!(!allows(Some("app:read"), Scope::Act));
        assert!(allows(Some("app:act"), Scope::Read));
        assert!(allows(Some("app:read app:act"), Scope::Act));
        assert!(!allows(Some(""), Scope::Read));
        assert!(!allows(Some("app:admin"), Scope::Read));
        assert!(!allows(Some("APP:ACT"), Scope::Act));
    }

    #[test]
    fn lists_are_read_strictly_and_normalized() {
        assert_eq!(parse_list(""), Ok(None));
        assert_eq!(parse_list("  "), Ok(None));
        assert_eq!(
            parse_list("app:act"),
            Ok(Some(vec![Scope::Read, Scope::Act]))
        );
        assert_eq!(
            parse_list("app:act app:read app:act"),
            Ok(Some(vec![Scope::Read, Scope::Act]))
        );
        assert_eq!(parse_list("app:read"), Ok(Some(vec![Scope::Read])));
        assert_eq!(parse_list("app:read openid"), Err("openid".to_owned()));
        assert_eq!(to_text(&[Scope::Read, Scope::Act]), "app:read app:act");
    }
}
