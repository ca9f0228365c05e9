//! The last dispatch outcome of each token, which `describe_context` turns into a hint
//! (`docs/semantics.md` §8.4).

use tea_agent_schema::protocol::{DrainError, ValidationIssue};

/// What the last `send_message` of a token ended with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LastOutcome {
    /// Dispatched without errors or warnings.
    Clean,
    /// Rejected before dispatch.
    Rejected {
        /// The variant (`msg.type`).
        variant: String,
        /// The rejection detail, or `rejected`.
        messages: Vec<String>,
    },
    /// Failed inside the server.
    Errored {
        /// The variant.
        variant: String,
        /// The failure messages.
        messages: Vec<String>,
    },
    /// Dispatched, with downstream errors or validation warnings.
    Caveats {
        /// The variant.
        variant: String,
        /// Update panics and effect failures.
        errors: Vec<DrainError>,
        /// Validation warnings.
        warnings: Vec<ValidationIssue>,
    },
}

impl LastOutcome {
    /// The hint put in front of the app's hints, or `None` for a clean outcome.
    pub fn hint(&self) -> Option<String> {
        match self {
            LastOutcome::Clean => None,
            LastOutcome::Rejected { variant, messages } => Some(format!(
                "LAST DISPATCH REJECTED: {variant} — {}. Fix the payload and retry.",
                if messages.is_empty() {
                    "no detail".to_string()
                } else {
                    messages.join("; ")
                }
            )),
            LastOutcome::Errored { variant, messages } => Some(format!(
                "LAST DISPATCH ERRORED MID-FLIGHT: {variant} — {}. State may be partially advanced; observe before retrying.",
                messages.first().map(String::as_str).unwrap_or("reducer threw")
            )),
            LastOutcome::Caveats {
                variant,
                errors,
                warnings,
            } => {
                let mut parts = Vec::new();
                if !errors.is_empty() {
                    let msgs: Vec<&str> = errors.iter().map(|e| e.message.as_str()).collect();
                    parts.push(format!(
                        "{} downstream error{}: {}",
                        errors.len(),
                        if errors.len() == 1 { "" } else { "s" },
                        msgs.join("; ")
                    ));
                }
                if !warnings.is_empty() {
                    let msgs: Vec<String> = warnings
                        .iter()
                        .map(|w| format!("{}: {}", w.path, w.message))
                        .collect();
                    parts.push(format!(
                        "{} validation warning{}: {}",
                        warnings.len(),
                        if warnings.len() == 1 { "" } else { "s" },
                        msgs.join("; ")
                    ));
                }
                Some(format!(
                    "LAST DISPATCH ({variant}) landed with caveats — {}.",
                    parts.join(" / ")
                ))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tea_agent_schema::protocol::{DrainErrorKind, IssueCode};

    #[test]
    fn hints_follow_the_spec() {
        let r = LastOutcome::Rejected {
            variant: "Matrix/AddCriteria".into(),
            messages: vec!["criteria[0].title: required field is missing".into()],
        };
        let h = r.hint().unwrap();
        assert!(h.starts_with("LAST DISPATCH REJECTED: Matrix/AddCriteria — criteria[0].title"));
        let e = LastOutcome::Errored {
            variant: "x".into(),
            messages: vec![],
        };
        assert!(e.hint().unwrap().contains("reducer threw"));
        assert!(e.hint().unwrap().contains("observe before retrying"));
        let c = LastOutcome::Caveats {
            variant: "X".into(),
            errors: vec![DrainError {
                kind: DrainErrorKind::Error,
                message: "m1".into(),
            }],
            warnings: vec![ValidationIssue {
                path: "payload".into(),
                code: IssueCode::UntypedField,
                message: "w".into(),
            }],
        };
        assert_eq!(
            c.hint().unwrap(),
            "LAST DISPATCH (X) landed with caveats — 1 downstream error: m1 / 1 validation warning: payload: w."
        );
        assert_eq!(LastOutcome::Clean.hint(), None);
    }
}
